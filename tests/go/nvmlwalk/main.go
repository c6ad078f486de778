// nvmlwalk: go-nvml conformance walk over the mock libnvidia-ml.so.1.
//
// It calls every method of go-nvml's Device interface (found by reflection,
// so a newer go-nvml adds its methods to the walk by itself) on every GPU
// the library enumerates: the read-only ones first, then, unless -no-set,
// the mutating ones (the node is a throwaway staged root).  Arguments are
// built from each parameter's type: integers 0, another GPU for a Device,
// a zeroed struct behind a pointer, one-element slices, real event sets and
// GPM samples.  A method that panics or answers ERROR_UNKNOWN fails.
//
// A symbol go-nvml calls that the library does not export makes the dynamic
// loader end the process ("symbol lookup error"), so the walk runs in a
// child (-child) that names each method on stderr before calling it; the
// parent records the missing symbol, skips that method and reruns.
//
// The parent writes a JSON report (-out): per GPU, the return code of every
// method and the SUCCESS values of the identity getters the test compares
// with the profile and with nvidia-smi (tests/integration/nvidia_gonvml.sh).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Methods that change the device: walked last.
var mutating = regexp.MustCompile(`^(Set|Clear|Reset|Create|Freeze|Register|PowerSmoothing|` +
	`WorkloadPowerProfile(Set|Clear|Update)|VgpuForceGspUnload|ReadWritePRM|GpmSetStreaming)`)

type call struct {
	Rc    string `json:"rc"`
	Value string `json:"value,omitempty"`
}

type gpu struct {
	Index int             `json:"index"`
	Calls map[string]call `json:"calls"`
	Facts map[string]any  `json:"facts"`
}

type report struct {
	Driver   string   `json:"driver"`
	Count    int      `json:"count"`
	Methods  int      `json:"methods"`
	Gpus     []gpu    `json:"gpus"`
	Migs     []gpu    `json:"mig_devices"`
	Missing  []string `json:"missing_symbols"`
	Skipped  []string `json:"skipped_methods"`
	Failures []string `json:"failures"`
}

func methods() []reflect.Method {
	t := reflect.TypeOf((*nvml.Device)(nil)).Elem()
	var ro, rw []reflect.Method
	for i := 0; i < t.NumMethod(); i++ {
		m := t.Method(i)
		if mutating.MatchString(m.Name) {
			rw = append(rw, m)
		} else {
			ro = append(ro, m)
		}
	}
	return append(ro, rw...)
}

// walker holds what argument construction needs across calls.
type walker struct {
	devs   []nvml.Device
	events nvml.EventSet
	sample nvml.GpmSample
}

var deviceType = reflect.TypeOf((*nvml.Device)(nil)).Elem()
var eventSetType = reflect.TypeOf((*nvml.EventSet)(nil)).Elem()
var gpmSampleType = reflect.TypeOf((*nvml.GpmSample)(nil)).Elem()
var fieldValueType = reflect.TypeOf(nvml.FieldValue{})

func (w *walker) arg(t reflect.Type, self int) reflect.Value {
	switch {
	case t == deviceType:
		return reflect.ValueOf(w.devs[(self+1)%len(w.devs)])
	case t == eventSetType:
		return reflect.ValueOf(w.events)
	case t == gpmSampleType:
		return reflect.ValueOf(w.sample)
	}
	switch t.Kind() {
	case reflect.Ptr:
		return reflect.New(t.Elem())
	case reflect.Slice:
		n := 1
		if t.Elem() == fieldValueType {
			n = 3
		}
		s := reflect.MakeSlice(t, n, n)
		if t.Elem() == fieldValueType { // link count, power, an unknown id
			for i, id := range []uint32{nvml.FI_DEV_NVLINK_LINK_COUNT, nvml.FI_DEV_POWER_INSTANT, 999999} {
				s.Index(i).FieldByName("FieldId").SetUint(uint64(id))
			}
		}
		return s
	case reflect.Interface:
		return w.handle(t, self)
	default:
		return reflect.Zero(t)
	}
}

// handle: a value of an interface type go-nvml dereferences (a vGPU type,
// a GPU instance...), taken from what the library lists for this GPU; an
// invalid Value when it lists none (the method is then not callable).
func (w *walker) handle(t reflect.Type, self int) reflect.Value {
	if t == reflect.TypeOf((*nvml.VgpuTypeId)(nil)).Elem() {
		if ids, r := w.devs[self].GetSupportedVgpus(); r == nvml.SUCCESS && len(ids) > 0 {
			return reflect.ValueOf(ids[0])
		}
	}
	return reflect.Value{}
}

func show(v reflect.Value) string {
	if !v.IsValid() {
		return ""
	}
	if v.Kind() == reflect.Interface && v.IsNil() {
		return "<nil>"
	}
	s := fmt.Sprintf("%v", v.Interface())
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// invoke one method; a panic is returned as an error text.
func (w *walker) invoke(d nvml.Device, self int, m reflect.Method) (c call, out []reflect.Value, perr string) {
	defer func() {
		if r := recover(); r != nil {
			perr = fmt.Sprintf("panic: %v", r)
		}
	}()
	fn := reflect.ValueOf(d).MethodByName(m.Name)
	ft := fn.Type()
	in := make([]reflect.Value, ft.NumIn())
	for i := range in {
		if in[i] = w.arg(ft.In(i), self); !in[i].IsValid() {
			return call{Rc: "NO_ARGUMENT", Value: "no " + ft.In(i).String() + " on this GPU"}, nil, ""
		}
	}
	out = fn.Call(in)
	c.Rc = "-"
	var vals []string
	for _, o := range out {
		if r, ok := o.Interface().(nvml.Return); ok {
			if c.Rc == "-" || r != nvml.SUCCESS {
				c.Rc = retName(r)
			}
			continue
		}
		vals = append(vals, show(o))
	}
	if c.Rc == "SUCCESS" || c.Rc == "-" {
		c.Value = strings.Join(vals, " | ")
	}
	return c, out, ""
}

var retNames = map[nvml.Return]string{}

func retName(r nvml.Return) string {
	if n, ok := retNames[r]; ok {
		return n
	}
	if r == nvml.ERROR_UNKNOWN {
		return "ERROR_UNKNOWN"
	}
	return fmt.Sprintf("%d:%s", int32(r), nvml.ErrorString(r))
}

func init() {
	retNames[nvml.SUCCESS] = "SUCCESS"
	retNames[nvml.ERROR_NOT_SUPPORTED] = "NOT_SUPPORTED"
	retNames[nvml.ERROR_INVALID_ARGUMENT] = "INVALID_ARGUMENT"
	retNames[nvml.ERROR_NOT_FOUND] = "NOT_FOUND"
	retNames[nvml.ERROR_NO_PERMISSION] = "NO_PERMISSION"
	retNames[nvml.ERROR_FUNCTION_NOT_FOUND] = "FUNCTION_NOT_FOUND"
	retNames[nvml.ERROR_ARGUMENT_VERSION_MISMATCH] = "ARGUMENT_VERSION_MISMATCH"
	retNames[nvml.ERROR_INSUFFICIENT_SIZE] = "INSUFFICIENT_SIZE"
	retNames[nvml.ERROR_UNKNOWN] = "ERROR_UNKNOWN"
}

func cstr(b []int8) string {
	s := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		s = append(s, byte(c))
	}
	return string(s)
}

// facts: the typed SUCCESS values the test compares with the profile.
func facts(d nvml.Device) map[string]any {
	f := map[string]any{}
	put := func(k string, v any, r nvml.Return) {
		if r == nvml.SUCCESS {
			f[k] = v
		} else {
			f[k] = retName(r)
		}
	}
	s, r := d.GetName()
	put("name", s, r)
	s, r = d.GetUUID()
	put("uuid", s, r)
	s, r = d.GetSerial()
	put("serial", s, r)
	p, r := d.GetPciInfo()
	put("bus_id", cstr(p.BusId[:]), r)
	put("pci_device_id", p.PciDeviceId, r)
	m, r := d.GetMemoryInfo()
	put("memory_total", m.Total, r)
	mi, r := d.GetMinorNumber()
	put("minor", mi, r)
	maj, mnr, r := d.GetCudaComputeCapability()
	put("cc", fmt.Sprintf("%d.%d", maj, mnr), r)
	a, r := d.GetArchitecture()
	put("arch", uint32(a), r)
	b, r := d.GetBrand()
	put("brand", int32(b), r)
	pl, r := d.GetPowerManagementLimit()
	put("power_limit_mw", pl, r)
	cl, r := d.GetMaxClockInfo(nvml.CLOCK_GRAPHICS)
	put("graphics_max", cl, r)
	cl, r = d.GetMaxClockInfo(nvml.CLOCK_MEM)
	put("memory_max", cl, r)
	t, r := d.GetTemperature(nvml.TEMPERATURE_GPU)
	put("temperature_gpu", t, r)
	s, r = d.GetBoardPartNumber()
	put("board_part_number", s, r)
	s, r = d.GetVbiosVersion()
	put("vbios", s, r)
	cur, pend, r := d.GetMigMode()
	put("mig_current", cur, r)
	put("mig_pending", pend, r)
	g, r := d.GetMaxPcieLinkGeneration()
	put("pcie_gen_max", g, r)
	g, r = d.GetMaxPcieLinkWidth()
	put("pcie_width_max", g, r)
	bid, r := d.GetBoardId()
	put("board_id", bid, r)
	return f
}

func child(only map[string]bool, skip map[string]bool, out string, noSet bool) int {
	rep := report{}
	if r := nvml.Init(); r != nvml.SUCCESS {
		fmt.Fprintf(os.Stderr, "nvmlwalk: nvml.Init: %v\n", nvml.ErrorString(r))
		return 2
	}
	defer nvml.Shutdown()
	rep.Driver, _ = nvml.SystemGetDriverVersion()
	n, r := nvml.DeviceGetCount()
	if r != nvml.SUCCESS || n == 0 {
		fmt.Fprintf(os.Stderr, "nvmlwalk: DeviceGetCount: %d GPUs, %s\n", n, retName(r))
		return 2
	}
	rep.Count = n
	w := &walker{}
	for i := 0; i < n; i++ {
		d, r := nvml.DeviceGetHandleByIndex(i)
		if r != nvml.SUCCESS {
			fmt.Fprintf(os.Stderr, "nvmlwalk: DeviceGetHandleByIndex(%d): %s\n", i, retName(r))
			return 2
		}
		w.devs = append(w.devs, d)
	}
	w.events, _ = nvml.EventSetCreate()
	w.sample, _ = nvml.GpmSampleAlloc()
	ms := methods()
	rep.Methods = len(ms)
	errw := bufio.NewWriter(os.Stderr)
	for i, d := range w.devs {
		g := gpu{Index: i, Calls: map[string]call{}, Facts: facts(d)}
		for _, m := range ms {
			if skip[m.Name] || (len(only) > 0 && !only[m.Name]) || (noSet && mutating.MatchString(m.Name)) {
				continue
			}
			fmt.Fprintf(errw, "nvmlwalk: calling %s\n", m.Name)
			errw.Flush()
			c, _, perr := w.invoke(d, i, m)
			if perr != "" {
				rep.Failures = append(rep.Failures, fmt.Sprintf("gpu%d %s: %s", i, m.Name, perr))
				c.Rc = "PANIC"
			} else if c.Rc == "ERROR_UNKNOWN" {
				rep.Failures = append(rep.Failures, fmt.Sprintf("gpu%d %s: ERROR_UNKNOWN", i, m.Name))
			}
			g.Calls[m.Name] = c
		}
		rep.Gpus = append(rep.Gpus, g)
	}
	// The MIG devices too (MIG on): every method on each handle, read-only
	// ones only (a setter on a MIG handle could tear its instance down
	// under the walk).
	for i, d := range w.devs {
		for k := 0; ; k++ {
			m, r := d.GetMigDeviceHandleByIndex(k)
			if r != nvml.SUCCESS {
				break
			}
			g := gpu{Index: i*1000 + k, Calls: map[string]call{}}
			for _, me := range ms {
				if skip[me.Name] || mutating.MatchString(me.Name) {
					continue
				}
				fmt.Fprintf(errw, "nvmlwalk: calling %s\n", me.Name)
				errw.Flush()
				c, _, perr := w.invoke(m, i, me)
				if perr != "" {
					rep.Failures = append(rep.Failures, fmt.Sprintf("gpu%d mig%d %s: %s", i, k, me.Name, perr))
					c.Rc = "PANIC"
				} else if c.Rc == "ERROR_UNKNOWN" {
					rep.Failures = append(rep.Failures, fmt.Sprintf("gpu%d mig%d %s: ERROR_UNKNOWN", i, k, me.Name))
				}
				g.Calls[me.Name] = c
			}
			rep.Migs = append(rep.Migs, g)
		}
	}
	fmt.Fprintf(errw, "nvmlwalk: done\n")
	errw.Flush()
	b, _ := json.MarshalIndent(rep, "", " ")
	if err := os.WriteFile(out, b, 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "nvmlwalk: %s: %v\n", out, err)
		return 2
	}
	return 0
}

var lookupErr = regexp.MustCompile(`undefined symbol: (\S+)`)

// parent: rerun the child, skipping each method whose symbol is missing.
func parent(out string, noSet bool) int {
	skip := map[string]string{}
	for round := 0; round < 400; round++ {
		args := []string{"-child", "-out", out}
		if noSet {
			args = append(args, "-no-set")
		}
		names := make([]string, 0, len(skip))
		for k := range skip {
			names = append(names, k)
		}
		sort.Strings(names)
		if len(names) > 0 {
			args = append(args, "-skip", strings.Join(names, ","))
		}
		cmd := exec.Command("/proc/self/exe", args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		cmd.Stdout = os.Stdout
		err := cmd.Run()
		if err == nil {
			return finish(out, skip)
		}
		text := stderr.String()
		last := ""
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, "nvmlwalk: calling ") {
				last = strings.TrimPrefix(l, "nvmlwalk: calling ")
			}
		}
		sym := lookupErr.FindStringSubmatch(text)
		if sym == nil || last == "" || skip[last] != "" {
			fmt.Fprintf(os.Stderr, "nvmlwalk: the walk died (%v) in %q:\n%s\n", err, last, tail(text, 30))
			return 1
		}
		skip[last] = sym[1]
	}
	fmt.Fprintln(os.Stderr, "nvmlwalk: too many missing symbols")
	return 1
}

func tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

func finish(out string, skip map[string]string) int {
	b, err := os.ReadFile(out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nvmlwalk:", err)
		return 1
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		fmt.Fprintln(os.Stderr, "nvmlwalk:", err)
		return 1
	}
	syms := map[string]bool{}
	for m, s := range skip {
		rep.Skipped = append(rep.Skipped, m+" ("+s+")")
		syms[s] = true
	}
	for s := range syms {
		rep.Missing = append(rep.Missing, s)
	}
	sort.Strings(rep.Skipped)
	sort.Strings(rep.Missing)
	b, _ = json.MarshalIndent(rep, "", " ")
	if err := os.WriteFile(out, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "nvmlwalk:", err)
		return 1
	}
	for _, f := range rep.Failures {
		fmt.Println("FAIL:", f)
	}
	calls := 0
	for _, g := range rep.Gpus {
		calls += len(g.Calls)
	}
	for _, g := range rep.Migs {
		calls += len(g.Calls)
	}
	fmt.Printf("nvmlwalk: driver %s, %d GPUs, %d MIG devices, %d Device methods, %d calls, %d symbols missing, %d failures\n",
		rep.Driver, rep.Count, len(rep.Migs), rep.Methods, calls, len(rep.Missing), len(rep.Failures))
	if len(rep.Failures) > 0 {
		return 1
	}
	return 0
}

func main() {
	isChild := flag.Bool("child", false, "run the walk in this process")
	out := flag.String("out", "nvmlwalk.json", "the JSON report")
	skipList := flag.String("skip", "", "comma-separated methods not to call")
	onlyList := flag.String("only", "", "comma-separated methods to call (default: all)")
	noSet := flag.Bool("no-set", false, "call only the read-only methods")
	flag.Parse()
	set := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, x := range strings.Split(s, ",") {
			if x != "" {
				m[x] = true
			}
		}
		return m
	}
	if *isChild {
		os.Exit(child(set(*onlyList), set(*skipList), *out, *noSet))
	}
	os.Exit(parent(*out, *noSet))
}
