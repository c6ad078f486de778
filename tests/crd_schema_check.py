#!/usr/bin/python3
"""Validate Kubernetes objects against the structural openAPIV3 schemas of
the CRDs in a directory, the way the API server would, for the subset the
Mokka CRDs use: type, properties (unknown fields are errors: the server
would prune them silently), required, enum, minimum/maximum,
minLength/maxLength, pattern, maxItems, items, additionalProperties,
format date-time, x-kubernetes-list-type map/set uniqueness.  Also checks
that each CRD is structural (every node typed), has the status subresource
and printer columns whose paths exist in the schema, and that Node
projections carry syntactically valid label keys/values.

usage: crd_schema_check.py CRD_DIR FILE...   (exit 1 on any error)
A document without spec is a status patch: only its status is checked."""
import re
import sys

import yaml

errors = []


def err(where, msg):
    errors.append(f"{where}: {msg}")


def structural(schema, path, crd):
    if "type" not in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
        err(crd, f"{path}: not structural: no type")
    for k, sub in schema.get("properties", {}).items():
        structural(sub, f"{path}.{k}", crd)
    if "items" in schema:
        structural(schema["items"], f"{path}[]", crd)
    if isinstance(schema.get("additionalProperties"), dict):
        if "properties" in schema:
            err(crd, f"{path}: properties and additionalProperties together")
        structural(schema["additionalProperties"], f"{path}.*", crd)
    if schema.get("type") == "array" and "items" not in schema:
        err(crd, f"{path}: array without items")


def column_path_exists(schema, json_path):
    node = schema
    for part in re.sub(r"\[\?.*?\]", "", json_path).strip(".").split("."):
        if node.get("type") == "array":
            node = node["items"]
        props = node.get("properties")
        if props is None:
            return node.get("type") == "object"  # free-form (metadata)
        if part not in props:
            return False
        node = props[part]
    return True


DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


def validate(v, s, path, where):
    t = s.get("type")
    if t == "integer":
        if not isinstance(v, int) or isinstance(v, bool):
            return err(where, f"{path}: want integer, got {v!r}")
    elif t == "number":
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            return err(where, f"{path}: want number, got {v!r}")
    elif t in TYPES and not isinstance(v, TYPES[t]):
        return err(where, f"{path}: want {t}, got {v!r}")
    if "enum" in s and v not in s["enum"]:
        err(where, f"{path}: {v!r} not in {s['enum']}")
    if "minimum" in s and v < s["minimum"]:
        err(where, f"{path}: {v} < minimum {s['minimum']}")
    if "maximum" in s and v > s["maximum"]:
        err(where, f"{path}: {v} > maximum {s['maximum']}")
    if t == "string":
        if "minLength" in s and len(v) < s["minLength"]:
            err(where, f"{path}: shorter than {s['minLength']}")
        if "maxLength" in s and len(v) > s["maxLength"]:
            err(where, f"{path}: longer than {s['maxLength']}")
        if "pattern" in s and not re.search(s["pattern"], v):
            err(where, f"{path}: {v!r} does not match {s['pattern']}")
        if s.get("format") == "date-time" and not DATE_TIME.match(v):
            err(where, f"{path}: {v!r} is not a date-time")
    if t == "object":
        for k in s.get("required", []):
            if k not in v:
                err(where, f"{path}.{k}: required")
        props = s.get("properties")
        addl = s.get("additionalProperties")
        for k, sub in v.items():
            if props is not None and k in props:
                validate(sub, props[k], f"{path}.{k}", where)
            elif isinstance(addl, dict):
                validate(sub, addl, f"{path}.{k}", where)
            elif props is not None and not s.get("x-kubernetes-preserve-unknown-fields"):
                err(where, f"{path}.{k}: unknown field (the API server would prune it)")
    if t == "array":
        if "maxItems" in s and len(v) > s["maxItems"]:
            err(where, f"{path}: more than {s['maxItems']} items")
        for i, item in enumerate(v):
            validate(item, s["items"], f"{path}[{i}]", where)
        lt = s.get("x-kubernetes-list-type")
        if lt == "set" and len(set(map(repr, v))) != len(v):
            err(where, f"{path}: duplicate entries in a set")
        if lt == "map":
            keys = [tuple(item.get(k) for k in s["x-kubernetes-list-map-keys"]) for item in v]
            if len(set(keys)) != len(keys):
                err(where, f"{path}: duplicate list-map keys")


LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$")
PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


def check_node(doc, where):
    md = doc.get("metadata", {})
    for k, v in (md.get("labels") or {}).items():
        prefix, _, name = k.rpartition("/")
        if (prefix and not PREFIX.match(prefix)) or not LABEL_NAME.match(name):
            err(where, f"metadata.labels: bad key {k!r}")
        if not isinstance(v, str) or (v and not LABEL_NAME.match(v)):
            err(where, f"metadata.labels.{k}: bad value {v!r}")
    for k, v in (md.get("annotations") or {}).items():
        if not isinstance(v, str):
            err(where, f"metadata.annotations.{k}: not a string")


def main():
    crd_dir, files = sys.argv[1], sys.argv[2:]
    import glob
    schemas = {}
    for f in sorted(glob.glob(f"{crd_dir}/*.yaml")):
        crd = yaml.safe_load(open(f))
        kind = crd["spec"]["names"]["kind"]
        for ver in crd["spec"]["versions"]:
            s = ver["schema"]["openAPIV3Schema"]
            structural(s, kind, f)
            if "status" not in ver.get("subresources", {}):
                err(f, "no status subresource")
            cols = ver.get("additionalPrinterColumns", [])
            if not cols:
                err(f, "no printer columns")
            for c in cols:
                if not column_path_exists(s, c["jsonPath"]):
                    err(f, f"printer column {c['name']}: {c['jsonPath']} not in the schema")
            schemas[(f"{crd['spec']['group']}/{ver['name']}", kind)] = s
    if len(schemas) != 4:
        err(crd_dir, f"want 4 CRDs, found {len(schemas)}")
    checked = 0
    for f in files:
        for i, doc in enumerate(yaml.safe_load_all(open(f))):
            if not doc:
                continue
            where = f"{f}#{i} {doc.get('kind')} {doc.get('metadata', {}).get('name')}"
            key = (doc.get("apiVersion"), doc.get("kind"))
            if key == ("v1", "Node"):
                check_node(doc, where)
                checked += 1
                continue
            if key not in schemas:
                continue
            s = schemas[key]
            if "spec" in doc:
                validate(doc, s, key[1], where)
            else:
                validate(doc.get("status", {}), s["properties"]["status"], "status", where)
            checked += 1
    for e in errors:
        print(f"FAIL: {e}")
    print(f"# {checked} objects checked against {len(schemas)} CRDs, {len(errors)} errors")
    return 1 if errors or not checked else 0


if __name__ == "__main__":
    sys.exit(main())
