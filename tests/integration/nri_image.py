#!/usr/bin/python3
"""Write a one-layer OCI image archive (an OCI layout in a tar) from a root
directory, for `ctr images import`: nri_image.py ROOTFS NAME OUT.tar CMD...
The image is named NAME through the io.containerd.image.name annotation."""
import gzip, hashlib, io, json, os, sys, tarfile

def blob(t, data):
    d = hashlib.sha256(data).hexdigest()
    info = tarfile.TarInfo("blobs/sha256/" + d)
    info.size = len(data)
    t.addfile(info, io.BytesIO(data))
    return "sha256:" + d, len(data)

def main():
    rootfs, name, out, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as lt:
        lt.add(rootfs, arcname=".")
    layer_tar = raw.getvalue()
    diff_id = "sha256:" + hashlib.sha256(layer_tar).hexdigest()
    layer = gzip.compress(layer_tar, mtime=0)
    with tarfile.open(out, "w") as t:
        ld, ll = blob(t, layer)
        config = json.dumps({
            "architecture": {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, "amd64"),
            "os": "linux",
            "config": {"Entrypoint": cmd, "Env": ["PATH=/bin:/usr/bin"]},
            "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        }).encode()
        cd, cl = blob(t, config)
        manifest = json.dumps({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": cl},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": ld, "size": ll}],
        }).encode()
        md, ml = blob(t, manifest)
        for fname, data in (("oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode()),
                            ("index.json", json.dumps({"schemaVersion": 2, "manifests": [{
                                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                                "digest": md, "size": ml,
                                "annotations": {"io.containerd.image.name": name,
                                                "org.opencontainers.image.ref.name": name.rsplit(":", 1)[-1]}}]}).encode())):
            info = tarfile.TarInfo(fname)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))

main()
