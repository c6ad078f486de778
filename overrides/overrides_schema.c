/* DeviceConfig's key table (see overrides_schema.h), and the keys the mock
 * NVML engine keeps at their boot values whatever the overrides say. */
#include <string.h>

#include "overrides/overrides.h"
#include "overrides/overrides_schema.h"

static const struct ovr_field cc_f[] = { I("major"), I("minor"), END };
static const struct ovr_field inforom_f[] = {
	S("image_version"), S("oem_object"), S("ecc_object"), S("pwr_object"),
	U("bbx_flush_timestamp_us"), U("bbx_flush_duration_us"), END };
static const struct ovr_field memory_f[] = {
	U("total_bytes"), U("reserved_bytes"), U("free_bytes"), U("used_bytes"),
	I("memory_bus_width"), U("cc_protected_bytes"), END };
static const struct ovr_field bar1_f[] = {
	U("total_bytes"), U("free_bytes"), U("used_bytes"), END };
static const struct ovr_field pci_f[] = {
	U("device_id"), U("subsystem_id"), S("bus_id"), END };
static const struct ovr_field pcie_f[] = {
	I("max_link_gen"), I("current_link_gen"), I("max_link_width"),
	I("current_link_width"), U("replay_counter"), U("tx_throughput_kbps"),
	U("rx_throughput_kbps"), U("atomic_caps_inbound"), U("atomic_caps_outbound"),
	I("gpu_max_link_gen"), END };
static const struct ovr_field power_f[] = {
	B("management_supported"), S("management_mode"), U("default_limit_mw"),
	U("enforced_limit_mw"), U("min_limit_mw"), U("max_limit_mw"),
	U("current_draw_mw"), S("power_state"), U("total_energy_consumption_mj"), END };
/* Module scope (Grace superchip: GPU, CPU and memory together). */
static const struct ovr_field module_power_f[] = {
	U("current_draw_mw"), U("default_limit_mw"), U("enforced_limit_mw"),
	U("min_limit_mw"), U("max_limit_mw"), U("limit_mw"), END };
static const struct ovr_field thermal_f[] = {
	I("temperature_gpu_c"), I("temperature_memory_c"), I("shutdown_threshold_c"),
	I("slowdown_threshold_c"), I("max_operating_c"), I("target_temperature_c"),
	I("memory_max_c"), END };
static const struct ovr_field fan_f[] = {
	I("count"), S("speed_percent"), S("target_speed_percent"), END };
static const struct ovr_field clocks_f[] = {
	I("graphics_current"), I("graphics_max"), I("graphics_app"),
	I("graphics_app_default"), I("sm_current"), I("sm_max"),
	I("memory_current"), I("memory_max"), I("memory_app"),
	I("memory_app_default"), I("video_current"), I("video_max"),
	S("auto_boost"), S("auto_boost_default"), END };
static const struct ovr_field throttle_counters_f[] = {
	U("sw_power_cap_us"), U("sync_boost_us"), U("sw_thermal_slowdown_us"),
	U("hw_thermal_slowdown_us"), U("hw_power_brake_slowdown_us"), END };
static const struct ovr_field throttle_f[] = {
	B("gpu_idle"), B("applications_clocks_setting"), B("sw_power_cap"),
	B("hw_slowdown"), B("hw_thermal_slowdown"), B("hw_power_brake_slowdown"),
	B("sync_boost"), B("sw_thermal_slowdown"), B("display_clocks_setting"),
	M("counters", throttle_counters_f), END };
static const struct ovr_field memory_clock_f[] = {
	I("freq_mhz"), SEQ("graphics_clocks", OVR_INT), END };
static const struct ovr_field supported_clocks_f[] = {
	SEQM("memory_clocks", memory_clock_f), END };
static const struct ovr_field utilization_f[] = {
	I("gpu"), I("memory"), I("encoder"), I("decoder"), I("jpeg"), I("ofa"), END };
static const struct ovr_field codec_stats_f[] = {
	I("session_count"), FL("average_fps"), FL("average_latency_us"), END };
static const struct ovr_field ecc_counts_f[] = {
	U("device_memory"), U("l1_cache"), U("l2_cache"), U("register_file"),
	U("texture_memory"), U("total"), END };
static const struct ovr_field ecc_bits_f[] = {
	M("single_bit", ecc_counts_f), M("double_bit", ecc_counts_f), END };
static const struct ovr_field ecc_errors_f[] = {
	M("volatile", ecc_bits_f), M("aggregate", ecc_bits_f), END };
static const struct ovr_field sram_counts_f[] = {
	U("correctable"), U("uncorrectable_parity"), U("uncorrectable_secded"), END };
static const struct ovr_field sram_sources_f[] = {
	U("l2"), U("sm"), U("microcontroller"), U("pcie"), U("other"), END };
static const struct ovr_field sram_f[] = {
	M("volatile", sram_counts_f), M("aggregate", sram_counts_f),
	M("uncorrectable_sources", sram_sources_f), B("threshold_exceeded"), END };
static const struct ovr_field ecc_f[] = {
	S("mode_current"), S("mode_pending"), S("default_mode"),
	M("errors", ecc_errors_f), M("sram", sram_f), END };
static const struct ovr_field retirement_f[] = {
	U("count"), SEQ("addresses", OVR_UINT), END };
static const struct ovr_field retired_pages_f[] = {
	M("single_bit_retirement", retirement_f), M("double_bit_retirement", retirement_f),
	B("pending_blacklist"), B("pending_retirement"), END };
static const struct ovr_field histogram_f[] = {
	U("max"), U("high"), U("partial"), U("low"), U("none"), END };
static const struct ovr_field remapped_rows_f[] = {
	U("correctable"), U("uncorrectable"), B("pending"), B("failure_occurred"),
	M("availability_histogram", histogram_f), END };
static const struct ovr_field display_f[] = { S("mode"), S("active"), END };
static const struct ovr_field mig_f[] = {
	S("mode_current"), S("mode_pending"), I("max_gpu_instances"),
	/* issue 12: SetMigMode "immediate" (bare metal) or "reset"; a declared
	 * layout in nvidia-mig-manager's shape (profile/compile_mig.c) */
	S("activation"), B("mig-enabled"), ANY("mig-devices"), END };
static const struct ovr_field current_pending_f[] = { S("current"), S("pending"), END };
static const struct ovr_field accounting_f[] = { S("mode"), I("buffer_size"), END };
static const struct ovr_field virtualization_f[] = { S("mode"), S("host_vgpu_mode"), END };
static const struct ovr_field gsp_f[] = { S("mode"), S("version"), END };
static const struct ovr_field features_f[] = {
	B("transformer_engine"), B("fp4_support"), B("fp6_support"), B("fp8_support"),
	B("confidential_compute"), B("nvlink_c2c"), B("decompression_engine"),
	B("fifth_gen_tensor_cores"), END };
static const struct ovr_field grace_f[] = {
	B("enabled"), I("cpu_cores"), I("cpu_memory_gb"), B("coherent_memory"), END };
static const struct ovr_field cpu_f[] = {
	S("type"), I("cores"), I("memory_gb"), B("coherent_memory"), END };
static const struct ovr_field topology_hint_f[] = { S("default_level"), END };
static const struct ovr_field process_f[] = {
	I("pid"), S("type"), S("name"), U("used_memory_mib"), I("sm_util"),
	I("mem_util"), I("enc_util"), I("dec_util"), END };
static const struct ovr_field dyn_temp_f[] = {
	FL("base_c"), FL("variance_c"), FL("ramp_c"), FL("ramp_period_sec"), END };
static const struct ovr_field dyn_power_f[] = { FL("base_mw"), FL("variance_mw"), END };
static const struct ovr_field dyn_util_f[] = {
	S("pattern"), FL("gpu_min"), FL("gpu_max"), FL("memory_min"),
	FL("memory_max"), FL("burst_period_sec"), END };
static const struct ovr_field dynamic_f[] = {
	I("seed"), M("temperature", dyn_temp_f), M("power", dyn_power_f),
	M("utilization", dyn_util_f), END };
static const struct ovr_field gpm_f[] = {
	B("supported"), FL("pcie_tx_mib_per_sec"), FL("pcie_rx_mib_per_sec"), END };
/* seq: the injection's sequence number (mokka-ctl), so the same code
 * injected twice is two events. */
static const struct ovr_field xid_f[] = { I("code"), U("seq"), END };
static const struct ovr_field failure_f[] = {
	S("mode"), FL("probability"), I("after_calls"), I("seed"), M("xid", xid_f), END };
static const struct ovr_field fabric_health_f[] = {
	S("degraded_bandwidth"), S("route_recovery"), S("route_unhealthy"),
	S("access_timeout_recovery"), S("incorrect_configuration"), END };
static const struct ovr_field fabric_f[] = {
	S("cluster_uuid"), U("clique_id"), S("state"), S("health_summary"),
	M("health", fabric_health_f), U("health_mask"), END };
static const struct ovr_field nvlink_error_f[] = { FL("rate"), SEQ("links", OVR_INT), END };
static const struct ovr_field platform_f[] = {
	S("chassis_serial_number"), I("slot_number"), I("tray_index"), I("host_id"),
	S("peer_type"), I("module_id"), END };

const struct ovr_field ovr_device_config[] = {
	S("name"), S("brand"), S("serial"), S("board_part_number"),
	S("gpu_part_number"), S("addressing_mode"), S("sparse_operation_mode"),
	U("graphics_voltage_uv"), M("module_power", module_power_f),
	S("vbios_version"), S("architecture"), M("compute_capability", cc_f),
	I("num_gpu_cores"), M("inforom", inforom_f), M("memory", memory_f),
	M("bar1_memory", bar1_f), M("pci", pci_f), M("pcie", pcie_f),
	M("power", power_f), M("thermal", thermal_f), M("fan", fan_f),
	M("clocks", clocks_f), M("clocks_throttle_reasons", throttle_f),
	M("supported_clocks", supported_clocks_f), S("performance_state"),
	M("utilization", utilization_f), M("encoder_stats", codec_stats_f),
	M("fbc_stats", codec_stats_f), M("ecc", ecc_f),
	M("retired_pages", retired_pages_f), M("remapped_rows", remapped_rows_f),
	M("display", display_f), S("persistence_mode"), S("compute_mode"),
	M("mig", mig_f), M("gpu_operation_mode", current_pending_f),
	M("driver_model", current_pending_f), M("accounting", accounting_f),
	M("virtualization", virtualization_f), M("gsp_firmware", gsp_f),
	M("features", features_f), M("grace_superchip", grace_f), M("cpu", cpu_f),
	M("topology", topology_hint_f), SEQM("processes", process_f),
	M("dynamic_metrics", dynamic_f), M("gpm", gpm_f), M("failure", failure_f),
	M("fabric", fabric_f), M("nvlink_error", nvlink_error_f),
	M("platform", platform_f), END };

/* The engine restores these after every merge (shims/nvml/engine_merge.c):
 * an override would silently do nothing, so mokka-ctl refuses it. */
const char *const ovr_frozen[] = {
	"name", "architecture", "brand", "compute_capability", "bar1_memory", "pci.bus_id", NULL,
};

const struct ovr_field *ovr_field_find(const struct ovr_field *t, const char *key, size_t len)
{
	while (t) {
		for (; t->key; t++)
			if (strlen(t->key) == len && !memcmp(t->key, key, len))
				return t;
		t = t->sub;	/* the END row names the table this one extends */
	}
	return NULL;
}
