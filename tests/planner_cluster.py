#!/usr/bin/python3
"""A stand-in for `kubectl get ... -o yaml` in planner tests and the bench:
prints one kubectl-style List of the objects a cluster would hold.

  --apply FILE...     objects as `kubectl apply` would store them (uid,
                      creationTimestamp, generation added)
  --nodes N           N eligible Nodes node-00000.. (--pool P labels them)
  --ineligible N      N more Nodes without mokka.nvidia.com/sgpu-node
  --envelope G,R,P    G rack groups x R racks of one 1-Node profile, P
                      policies (the bench's full envelope); Node i is
                      labelled for group i % G
  --applied DIR       what mokka-plan -o DIR wrote, as if applied with
                      server-side apply: its SGPURacks exist and its Node
                      projections are on the Nodes (removals drop them)
  --node-uid-suffix S appended to every generated Node UID (replacement)
"""
import argparse
import json
import os
import sys
import uuid

import yaml

NS = uuid.UUID("6ba7b811-9dad-11d1-80b4-00c04fd430c8")


def stamp(i):
    return "2026-01-01T%02d:%02d:%02dZ" % (i // 3600 % 24, i // 60 % 60, i % 60)


def stored(doc, i):
    md = doc.setdefault("metadata", {})
    md.setdefault("uid", str(uuid.uuid5(NS, doc["kind"] + "/" + md["name"])))
    md.setdefault("creationTimestamp", stamp(i))
    md.setdefault("generation", 1)
    return doc


def node(i, eligible, pool, suffix):
    labels = {"kubernetes.io/hostname": "node-%05d" % i}
    if eligible:
        labels["mokka.nvidia.com/sgpu-node"] = "true"
    if pool:
        labels["mokka.nvidia.com/pool"] = pool
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "node-%05d" % i, "uid": "node-uid-%05d%s" % (i, suffix),
                         "creationTimestamp": stamp(1000 + i), "labels": labels,
                         "annotations": {"node.alpha.kubernetes.io/ttl": "0"}}}


def envelope(groups, racks, policies):
    out = [stored({"apiVersion": "mokka.nvidia.com/v1alpha1", "kind": "SGPURackProfile",
                   "metadata": {"name": "bench"},
                   "spec": {"nodesPerRack": 1, "gpusPerNode": 4, "defaults": {"runtime": {
                       "health": {"state": "Healthy"},
                       "telemetry": {"drawMilliWatts": 300000, "temperatureCelsius": 40}}}}}, 0)]
    rg = [{"name": "g%02d" % g, "profileRef": {"name": "bench"}, "count": racks,
           "nodeSelector": {"matchLabels": {"mokka.nvidia.com/pool": "g%02d" % g}}}
          for g in range(groups)]
    out.append(stored({"apiVersion": "mokka.nvidia.com/v1alpha1", "kind": "SGPUInventory",
                       "metadata": {"name": "bench"}, "spec": {"rackGroups": rg}}, 1))
    for p in range(policies):
        g = p % groups
        out.append(stored({"apiVersion": "mokka.nvidia.com/v1alpha1", "kind": "SGPURuntimePolicy",
                           "metadata": {"name": "pol-%05d" % p},
                           "spec": {"targetRef": {"name": "bench", "rackGroups": ["g%02d" % g],
                                                  "rackIndexes": [p // groups % racks],
                                                  "gpuIndexes": [p % 4]},
                                    "telemetry": {"drawMilliWatts": p}}}, 2 + p))
    return out


def apply_state(objs, state_dir):
    nodes = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Node"}
    racks = []
    for doc in yaml.safe_load_all(open(os.path.join(state_dir, "apply.yaml"))):
        if not doc:
            continue
        if doc["kind"] == "SGPURack":
            racks.append(stored(doc, 5))
            continue
        n = nodes.get(doc["metadata"]["name"])
        if not n or n["metadata"]["uid"] != doc["metadata"].get("uid"):
            continue  # the apply's UID precondition fails
        md = n["metadata"]
        for key in ("labels", "annotations"):
            cur = md.setdefault(key, {})
            for k in [k for k in cur if k.startswith("mokka.nvidia.com/sgpu-a") or k == "nvidia.com/gpu.clique"]:
                del cur[k]  # fields the manager no longer applies go away
            cur.update(doc["metadata"].get(key) or {})
    return objs + racks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--apply", nargs="*", default=[])
    ap.add_argument("--nodes", type=int, default=0)
    ap.add_argument("--ineligible", type=int, default=0)
    ap.add_argument("--pool", default="")
    ap.add_argument("--envelope")
    ap.add_argument("--applied")
    ap.add_argument("--node-uid-suffix", default="")
    a = ap.parse_args()
    objs = []
    for i, f in enumerate(a.apply):
        for doc in yaml.safe_load_all(open(f)):
            if doc:
                objs.append(stored(doc, i))
    if a.envelope:
        objs += envelope(*map(int, a.envelope.split(",")))
    groups = int(a.envelope.split(",")[0]) if a.envelope else 0
    # with an envelope, Node i joins group i % groups (through its pool label)
    pool = lambda i: a.pool or (groups and "g%02d" % (i % groups)) or ""
    objs += [node(i, True, pool(i), a.node_uid_suffix) for i in range(a.nodes)]
    objs += [node(a.nodes + i, False, a.pool, a.node_uid_suffix) for i in range(a.ineligible)]
    if a.applied:
        objs = apply_state(objs, a.applied)
    out = {"apiVersion": "v1", "items": objs, "kind": "List", "metadata": {"resourceVersion": ""}}
    yaml.dump(out, sys.stdout, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper),
              sort_keys=False, width=1 << 20)


if __name__ == "__main__":
    main()
