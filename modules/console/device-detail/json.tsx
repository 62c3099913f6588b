/** Any JSON value, pretty-printed and escaped (telemetry payloads, command output). */
export function Json({ value }: { value: unknown }) {
  return (
    <pre class="json" safe>
      {JSON.stringify(value, null, 2)}
    </pre>
  );
}
