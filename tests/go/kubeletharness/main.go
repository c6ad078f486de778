// kubeletharness: the kubelet's side of the device-plugin API (v1beta1), for
// testing NVIDIA's k8s-device-plugin against a Mokka node without a kubelet.
//
// It serves Registration on -socket (the kubelet.sock the plugin is pointed
// at with --kubelet-socket), accepts the plugin's Register call, dials the
// plugin's endpoint in the same directory, reads GetDevicePluginOptions and
// then follows ListAndWatch, printing one line per update:
//
//	devices <resource> healthy=<n> unhealthy=<ids,...> total=<n>
//
// After the first update it calls Allocate for -allocate (comma-separated
// device IDs from the list, or "first:N" for the first N) and prints the
// response as JSON on a line starting with "allocate ".  It exits when
// -until (a predicate "unhealthy:<id>", "unhealthy-count:<n>") holds, or after
// -timeout, with status 0 if the predicate held, 1 otherwise.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

type registration struct {
	pluginapi.UnimplementedRegistrationServer
	got chan *pluginapi.RegisterRequest
}

func (r *registration) Register(_ context.Context, req *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	fmt.Printf("register version=%s endpoint=%s resource=%s\n", req.Version, req.Endpoint, req.ResourceName)
	r.got <- req
	return &pluginapi.Empty{}, nil
}

func main() {
	sock := flag.String("socket", "", "the kubelet's registration socket to serve")
	alloc := flag.String("allocate", "first:1", "device IDs to Allocate once the devices are listed")
	until := flag.String("until", "", "stop when this holds: unhealthy:<id> | unhealthy-count:<n>")
	timeout := flag.Duration("timeout", 60*time.Second, "give up after this long")
	ready := flag.String("ready-file", "", "created once Allocate answered (the test injects faults after it)")
	listOnly := flag.Int("list-only", 0, "accept this many registrations (one per resource), print each one's first device list, exit")
	flag.Parse()
	if *sock == "" {
		fmt.Fprintln(os.Stderr, "kubeletharness: -socket is required")
		os.Exit(2)
	}
	os.Remove(*sock)
	l, err := net.Listen("unix", *sock)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeletharness:", err)
		os.Exit(2)
	}
	srv := grpc.NewServer()
	reg := &registration{got: make(chan *pluginapi.RegisterRequest, 4)}
	pluginapi.RegisterRegistrationServer(srv, reg)
	go srv.Serve(l)
	defer srv.Stop()

	deadline := time.After(*timeout)
	if *listOnly > 0 {
		os.Exit(listResources(reg, *listOnly, *sock, *timeout, deadline))
	}
	var req *pluginapi.RegisterRequest
	select {
	case req = <-reg.got:
	case <-deadline:
		fmt.Println("FAIL: no Register call within", *timeout)
		os.Exit(1)
	}
	if req.Version != pluginapi.Version {
		fmt.Printf("FAIL: plugin API version %q, want %q\n", req.Version, pluginapi.Version)
		os.Exit(1)
	}
	ep := filepath.Join(filepath.Dir(*sock), req.Endpoint)
	conn, err := grpc.NewClient("unix://"+ep, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Println("FAIL: dial", ep, err)
		os.Exit(1)
	}
	defer conn.Close()
	cl := pluginapi.NewDevicePluginClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	opts, err := cl.GetDevicePluginOptions(ctx, &pluginapi.Empty{})
	if err != nil {
		fmt.Println("FAIL: GetDevicePluginOptions:", err)
		os.Exit(1)
	}
	fmt.Printf("options prestart=%v preferred=%v\n", opts.PreStartRequired, opts.GetPreferredAllocationAvailable)
	stream, err := cl.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		fmt.Println("FAIL: ListAndWatch:", err)
		os.Exit(1)
	}
	allocated := false
	for {
		resp, err := stream.Recv()
		if err != nil {
			fmt.Println("FAIL: ListAndWatch ended:", err)
			os.Exit(1)
		}
		var ids, bad []string
		for _, d := range resp.Devices {
			ids = append(ids, d.ID)
			if d.Health != pluginapi.Healthy {
				bad = append(bad, d.ID)
			}
		}
		sort.Strings(ids)
		sort.Strings(bad)
		fmt.Printf("devices %s healthy=%d unhealthy=%s total=%d ids=%s\n", req.ResourceName,
			len(ids)-len(bad), strings.Join(bad, ","), len(ids), strings.Join(ids, ","))
		if !allocated {
			allocated = true
			want := pick(*alloc, resp.Devices)
			ar, err := cl.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIDs: want}}})
			if err != nil {
				fmt.Println("FAIL: Allocate:", err)
				os.Exit(1)
			}
			b, _ := json.Marshal(ar.ContainerResponses[0])
			fmt.Printf("allocate %s -> %s\n", strings.Join(want, ","), b)
			if *ready != "" {
				os.WriteFile(*ready, nil, 0o644)
			}
		}
		if holds(*until, bad) {
			os.Exit(0)
		}
		if *until == "" {
			os.Exit(0)
		}
	}
}

// listResources: n plugins (the MIG strategies register one per resource):
// each one's first ListAndWatch answer, printed as a "devices" line.
func listResources(reg *registration, n int, sock string, timeout time.Duration, deadline <-chan time.Time) int {
	done := make(chan string, n)
	for i := 0; i < n; i++ {
		var req *pluginapi.RegisterRequest
		select {
		case req = <-reg.got:
		case <-deadline:
			fmt.Printf("FAIL: %d of %d plugins registered within %v\n", i, n, timeout)
			return 1
		}
		go func(req *pluginapi.RegisterRequest) {
			ep := filepath.Join(filepath.Dir(sock), req.Endpoint)
			conn, err := grpc.NewClient("unix://"+ep, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				done <- fmt.Sprintf("FAIL: dial %s: %v", ep, err)
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			st, err := pluginapi.NewDevicePluginClient(conn).ListAndWatch(ctx, &pluginapi.Empty{})
			if err != nil {
				done <- fmt.Sprintf("FAIL: ListAndWatch %s: %v", req.ResourceName, err)
				return
			}
			resp, err := st.Recv()
			if err != nil {
				done <- fmt.Sprintf("FAIL: ListAndWatch %s: %v", req.ResourceName, err)
				return
			}
			healthy := 0
			for _, d := range resp.Devices {
				if d.Health == pluginapi.Healthy {
					healthy++
				}
			}
			done <- fmt.Sprintf("devices %s healthy=%d total=%d", req.ResourceName, healthy, len(resp.Devices))
		}(req)
	}
	var lines []string
	for i := 0; i < n; i++ {
		select {
		case l := <-done:
			lines = append(lines, l)
		case <-deadline:
			fmt.Println("FAIL: no device list within", timeout)
			return 1
		}
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	return 0
}

// pick: the IDs to allocate, "first:N" taken in the order listed.
func pick(spec string, devs []*pluginapi.Device) []string {
	if n, ok := strings.CutPrefix(spec, "first:"); ok {
		k, _ := strconv.Atoi(n)
		var out []string
		for i := 0; i < k && i < len(devs); i++ {
			out = append(out, devs[i].ID)
		}
		return out
	}
	return strings.Split(spec, ",")
}

func holds(until string, bad []string) bool {
	if id, ok := strings.CutPrefix(until, "unhealthy:"); ok {
		for _, b := range bad {
			if b == id {
				return true
			}
		}
		return false
	}
	if n, ok := strings.CutPrefix(until, "unhealthy-count:"); ok {
		k, _ := strconv.Atoi(n)
		return len(bad) >= k
	}
	return false
}
