/**
 * QuickJS WebAssembly instances for the sandbox (./sandbox.ts): the module compiled once per process,
 * each instance with its own bounded `WebAssembly.Memory`, and a pool of idle ones a session leases
 * and gives back (or drops, when anything about it is doubtful).
 */
import fs from "node:fs";
import wasmPath from "@jitl/quickjs-wasmfile-release-sync/wasm" with { type: "file" };
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSWASMModule,
  RELEASE_SYNC,
} from "quickjs-emscripten";

const WASM_PAGE = 65536;
const BASE_PAGES = 256; // the QuickJS build's initial 16 MiB heap

let compiledModule: Promise<WebAssembly.Module> | null = null;

/** Compile the QuickJS WebAssembly module once per process (~25 ms); instances are cheap. */
export function quickjsModule(): Promise<WebAssembly.Module> {
  compiledModule ??= WebAssembly.compile(fs.readFileSync(wasmPath));
  return compiledModule;
}

export interface InstanceLease {
  module: QuickJSWASMModule;
  memory: WebAssembly.Memory;
  memoryMb: number;
}

const POOL_MAX = 16;
const REUSE_MAX_BYTES = BASE_PAGES * WASM_PAGE + 16 * 1024 * 1024;
const idleInstances = new Set<InstanceLease>();

/** A QuickJS WebAssembly instance with its own bounded memory, reused from the pool when possible. */
export async function leaseInstance(memoryMb: number): Promise<InstanceLease> {
  for (const idle of idleInstances) {
    if (idle.memoryMb !== memoryMb) continue;
    idleInstances.delete(idle);
    return idle;
  }
  return newInstance(memoryMb);
}

async function newInstance(memoryMb: number): Promise<InstanceLease> {
  const memory = new WebAssembly.Memory({
    initial: BASE_PAGES,
    maximum: Math.max(BASE_PAGES + 1, Math.ceil((memoryMb * 1024 * 1024) / WASM_PAGE)),
  });
  const variant = newVariant(RELEASE_SYNC, {
    wasmModule: await quickjsModule(),
    wasmMemory: memory,
    emscriptenModule: { printErr: () => {}, print: () => {} } as never,
  });
  return { module: await newQuickJSWASMModuleFromVariant(variant), memory, memoryMb };
}

export function releaseInstance(lease: InstanceLease, reusable: boolean) {
  if (!reusable || lease.memory.buffer.byteLength > REUSE_MAX_BYTES || idleInstances.size >= POOL_MAX) return;
  idleInstances.add(lease);
}

/**
 * Compile the WebAssembly module and fill the pool with up to `count` instances, so that the first
 * script runs of a process do not pay for them (the daemon calls this at start).
 */
export async function prewarmInstances(memoryMb: number, count: number): Promise<void> {
  const wanted = Math.max(
    0,
    Math.min(POOL_MAX, count) - [...idleInstances].filter((l) => l.memoryMb === memoryMb).length,
  );
  // New instances: leasing would take the idle ones out and put them back, adding none.
  const leases = await Promise.all(Array.from({ length: wanted }, () => newInstance(memoryMb)));
  for (const lease of leases) {
    // A first runtime touches the instance's heap pages; a run then finds them mapped.
    lease.module.newRuntime().dispose();
    releaseInstance(lease, true);
  }
}

/** Number of idle pooled instances (for tests and the benchmark). */
export function pooledInstanceCount(): number {
  return idleInstances.size;
}
