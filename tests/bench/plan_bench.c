/* The planner at the full envelope: 100,000 eligible Nodes, 64 rack groups
 * (100,000 racks of one Node), 10,000 runtime policies.  Times decoding,
 * the full plan and the emit of every document, then an incremental
 * re-plan with one Node added (decode it, place it, emit its projection
 * and desired state); prints peak RSS.  With --write FILE it also writes
 * the input (a kubectl-style List) for timing mokka-plan itself.
 * Output: "bench: <what> <value> <unit>" lines (tests/bench/plan.sh). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "planner/decode.h"
#include "planner/emit.h"

#define GROUPS 64
#define NODES 100000
#define POLICIES 10000

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(getenv("BENCH_CPU") ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int racks_of(int g)
{
	return NODES / GROUPS + (g < NODES % GROUPS);	/* 1563 x 32 + 1562 x 32 */
}

static void node_doc(FILE *f, int i)
{
	fprintf(f, "- apiVersion: v1\n  kind: Node\n  metadata:\n    name: node-%06d\n"
		"    uid: 0000%04x-%04x-4000-8000-%012d\n"
		"    creationTimestamp: \"2026-01-%02dT%02d:%02d:%02dZ\"\n    labels:\n"
		"      kubernetes.io/hostname: node-%06d\n      kubernetes.io/arch: amd64\n"
		"      kubernetes.io/os: linux\n      node.kubernetes.io/instance-type: gb200\n"
		"      topology.kubernetes.io/zone: zone-%d\n"
		"      mokka.nvidia.com/sgpu-node: \"true\"\n      mokka.nvidia.com/pool: g%02d\n"
		"    annotations:\n      node.alpha.kubernetes.io/ttl: \"0\"\n"
		"      volumes.kubernetes.io/controller-managed-attach-detach: \"true\"\n",
		i, i >> 16, i & 0xffff, i, 2 + i / 86400, i / 3600 % 24, i / 60 % 60, i % 60,
		i, i % 3, i % GROUPS);
}

static void policy_doc(FILE *f, int p)
{
	int g = p % GROUPS, r = p / GROUPS % racks_of(g);
	char target[160];

	/* 70% GPU scope, 20% Node scope, 10% Rack scope */
	if (p % 10 < 7)
		snprintf(target, sizeof(target), "rackGroups: [g%02d], rackIndexes: [%d], "
			 "nodeIndexes: [0], gpuIndexes: [%d]", g, r, p % 4);
	else if (p % 10 < 9)
		snprintf(target, sizeof(target), "rackGroups: [g%02d], rackIndexes: [%d], "
			 "nodeIndexes: [0]", g, r);
	else
		snprintf(target, sizeof(target), "rackGroups: [g%02d], rackIndexes: [%d]", g, r);
	fprintf(f, "- apiVersion: mokka.nvidia.com/v1alpha1\n  kind: SGPURuntimePolicy\n"
		"  metadata: {name: pol-%05d, uid: pu-%05d, creationTimestamp: \"2026-01-01T00:00:00Z\"}\n"
		"  spec:\n    targetRef: {name: bench, %s}\n"
		"    telemetry: {drawMilliWatts: %d, temperatureCelsius: %d}\n%s",
		p, p, target, p, 30 + p % 50, p % 100 == 0 ? "    health: {state: Failed, xid: 79}\n" : "");
}

static void write_input(FILE *f, int nodes)
{
	fprintf(f, "apiVersion: v1\nitems:\n- apiVersion: mokka.nvidia.com/v1alpha1\n"
		"  kind: SGPURackProfile\n  metadata: {name: bench, uid: pb, generation: 1}\n"
		"  spec:\n    nodesPerRack: 1\n    gpusPerNode: 4\n    defaults:\n      runtime:\n"
		"        health: {state: Healthy}\n        telemetry: {drawMilliWatts: 300000}\n"
		"- apiVersion: mokka.nvidia.com/v1alpha1\n  kind: SGPUInventory\n"
		"  metadata: {name: bench, uid: ib, generation: 1, creationTimestamp: \"2026-01-01T00:00:00Z\"}\n"
		"  spec:\n    rackGroups:\n");
	for (int g = 0; g < GROUPS; g++)
		fprintf(f, "    - {name: g%02d, profileRef: {name: bench}, count: %d, "
			"nodeSelector: {matchLabels: {mokka.nvidia.com/pool: g%02d}}}\n", g, racks_of(g), g);
	for (int p = 0; p < POLICIES; p++)
		policy_doc(f, p);
	for (int i = 0; i < nodes; i++)
		node_doc(f, i);
	fprintf(f, "kind: List\nmetadata: {resourceVersion: \"\"}\n");
}

static int emit_all(struct pl_world *w, FILE *out)
{
	int *ns, n, rc = pl_emit_apply(out, w);

	rc = rc ?: pl_emit_status(out, w, "2026-01-01T00:00:00Z");
	n = pl_state_nodes(w, &ns);
	for (int i = 0; !rc && i < n; i++)
		rc = pl_emit_node_state(out, w, ns[i]);
	free(ns);
	return rc;
}

int main(int argc, char **argv)
{
	struct pl_world w;
	struct pl_decoder d = { .w = &w, .source = "bench" };
	FILE *devnull = fopen("/dev/null", "w");
	char *buf = NULL, *one = NULL;
	size_t len = 0, onelen = 0;
	FILE *m = open_memstream(&buf, &len);
	struct rusage ru;
	double t0, t1, t2, t3, t4;
	int accepted = 0, bound = 0, last;

	if (argc == 3 && !strcmp(argv[1], "--write")) {
		FILE *f = fopen(argv[2], "w");

		if (!f)
			return 1;
		write_input(f, NODES);
		return fclose(f) ? 1 : 0;
	}
	write_input(m, NODES - 1);	/* the last coordinate stays free */
	fclose(m);
	m = open_memstream(&one, &onelen);
	node_doc(m, NODES - 1);
	fclose(m);
	memmove(one, one + 2, onelen - 1);	/* "- " item -> a document */
	for (char *p = one; (p = strstr(p, "\n  ")); p++)
		memmove(p + 1, p + 3, strlen(p + 3) + 1);
	pl_world_init(&w);
	t0 = now_ms();
	if (pl_decode(&d, buf, len) < 0) {
		fprintf(stderr, "decode: %s\n", d.err);
		return 1;
	}
	t1 = now_ms();
	if (pl_plan(&w) < 0)
		return 1;
	t2 = now_ms();
	if (emit_all(&w, devnull) < 0)
		return 1;
	t3 = now_ms();
	for (int i = 0; i < w.npolicies; i++)
		accepted += w.policies[i].reason == PL_R_ACCEPTED;
	for (int i = 0; i < w.nnodes; i++)
		bound += w.nodes[i].state == PL_N_BOUND;
	/* incremental: one Node more */
	t3 = now_ms();
	if (pl_decode(&d, one, strlen(one)) < 0) {
		fprintf(stderr, "decode one: %s\n", d.err);
		return 1;
	}
	last = w.nnodes - 1;
	if (pl_plan_new_nodes(&w, last) < 0 || w.nodes[last].state != PL_N_BOUND ||
	    pl_emit_node_state(devnull, &w, last) < 0)
		return 1;
	t4 = now_ms();
	getrusage(RUSAGE_SELF, &ru);
	printf("bench: plan nodes %d bound %d racks %d groups %d policies %d accepted %d\n",
	       w.nnodes - 1, bound, w.nracks, GROUPS, w.npolicies, accepted);
	printf("bench: plan decode %.0f ms\n", t1 - t0);
	printf("bench: plan full %.0f ms\n", t2 - t1);
	printf("bench: plan emit %.0f ms\n", t3 - t2);
	printf("bench: plan incremental %.3f ms (one Node added: %s -> %s)\n", t4 - t3,
	       w.nodes[last].m.name, w.racks[w.nodes[last].rack].m.name);
	printf("bench: plan peak-rss %ld MiB (input %zu MiB)\n", ru.ru_maxrss / 1024, len >> 20);
	free(buf);
	free(one);
	pl_decoder_free(&d);
	pl_world_free(&w);
	fclose(devnull);
	return 0;
}
