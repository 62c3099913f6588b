// Values crossing the QuickJS sandbox's boundary: host values into the sandbox, sandbox values out, and
// the cap on the messages that come back.
import type { QuickJSContext, QuickJSHandle } from "quickjs-emscripten";

const MAX_MESSAGE_CHARS = 2000;

export function truncate(text: string, max = MAX_MESSAGE_CHARS): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/**
 * A sandbox value as a host value. `vm.dump` disposes a promise's handle (it reports its state), which
 * its owner disposes again ("Lifetime not alive"): it gets a copy to dispose instead.
 */
export function dumpValue(vm: QuickJSContext, handle: QuickJSHandle): unknown {
  const copy = handle.dup();
  try {
    return vm.dump(copy);
  } finally {
    if (copy.alive) copy.dispose();
  }
}

/** A host value as a new sandbox handle (JSON-like values; anything else becomes undefined). */
export function toVm(vm: QuickJSContext, value: unknown): QuickJSHandle {
  if (value === null) return vm.null;
  if (typeof value === "boolean") return value ? vm.true : vm.false;
  if (typeof value === "number") return vm.newNumber(value);
  if (typeof value === "bigint") return vm.newNumber(Number(value));
  if (typeof value === "string") return vm.newString(value);
  if (Array.isArray(value)) {
    const arr = vm.newArray();
    value.forEach((item, i) => {
      const h = toVm(vm, item);
      vm.setProp(arr, i, h);
      h.dispose();
    });
    return arr;
  }
  if (typeof value === "object") {
    const obj = vm.newObject();
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      const h = toVm(vm, v);
      vm.setProp(obj, k, h);
      h.dispose();
    }
    return obj;
  }
  return vm.undefined; // undefined, functions, symbols
}
