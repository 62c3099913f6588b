/*---
name: disk
version: 1
description: Disk usage per mounted filesystem (statfs), like df; pseudo filesystems are skipped.
schema:
  type: object
  required: [mounts, max_used_pct]
  properties:
    root_used_pct: { type: [number, "null"], minimum: 0, maximum: 100 }
    max_used_pct: { type: number, minimum: 0, maximum: 100 }
    mounts:
      type: array
      items:
        type: object
        required: [mount, fs_type, total_bytes, used_bytes, avail_bytes, used_pct]
        properties:
          mount: { type: string }
          device: { type: string }
          fs_type: { type: string }
          total_bytes: { type: integer, minimum: 0 }
          used_bytes: { type: integer, minimum: 0 }
          avail_bytes: { type: integer, minimum: 0 }
          used_pct: { type: number, minimum: 0, maximum: 100 }
---*/
const PSEUDO = new Set([
  "proc",
  "sysfs",
  "devtmpfs",
  "devpts",
  "tmpfs",
  "cgroup",
  "cgroup2",
  "mqueue",
  "securityfs",
  "debugfs",
  "tracefs",
  "pstore",
  "bpf",
  "configfs",
  "fusectl",
  "hugetlbfs",
  "autofs",
  "binfmt_misc",
  "rpc_pipefs",
  "nsfs",
  "squashfs",
  "ramfs",
  "efivarfs",
  "selinuxfs",
  "overlayfs-meta",
  "fuse.lxcfs",
  "nfsd",
]);

function decodeMountField(field) {
  return field.replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));
}

// biome-ignore lint/correctness/noUnusedVariables: main() is called by the agent
function main() {
  const seen = new Set();
  const mounts = [];
  for (const line of read_file("/proc/mounts").split("\n")) {
    const [device, rawMount, fsType] = line.split(" ");
    if (!rawMount || PSEUDO.has(fsType)) continue;
    const mount = decodeMountField(rawMount);
    if (seen.has(mount)) continue;
    seen.add(mount);
    let s;
    try {
      s = statfs(mount);
    } catch {
      continue;
    }
    if (!s.blocks) continue;
    const total = s.blocks * s.bsize;
    const used = (s.blocks - s.bfree) * s.bsize;
    const avail = s.bavail * s.bsize;
    const usedPct = used + avail > 0 ? Math.round((used / (used + avail)) * 10000) / 100 : 0;
    mounts.push({
      mount,
      device: decodeMountField(device),
      fs_type: fsType,
      total_bytes: total,
      used_bytes: used,
      avail_bytes: avail,
      used_pct: usedPct,
    });
  }
  const root = mounts.find((m) => m.mount === "/");
  return {
    root_used_pct: root ? root.used_pct : null,
    max_used_pct: mounts.reduce((max, m) => Math.max(max, m.used_pct), 0),
    mounts,
  };
}
