/** The tunnel server's host key fingerprint: agents pin it; compare it with what a device reports. */
export function TunnelHostKeySection({ fingerprint }: { fingerprint: string | undefined }) {
  if (!fingerprint) return "";
  return (
    <section class="card" id="remote-access">
      <div class="card-head">
        <h2>Remote access</h2>
      </div>
      <dl class="facts">
        <dt>Tunnel host key</dt>
        <dd class="mono" safe>
          {fingerprint}
        </dd>
      </dl>
    </section>
  );
}
