/**
 * Runs `script` (`sh -c`, its arguments `args`) as the install line runs on a device: `$URL` is the
 * server, nothing of this process's environment but PATH; killed after 90 s. Async: the server
 * answering curl is usually this process.
 */
export async function runShell(script: string, args: string[], env: Record<string, string>) {
  const child = Bun.spawn(["sh", "-c", script, "install", ...args], {
    env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const killer = setTimeout(() => child.kill("SIGKILL"), 90_000);
  const [out, err, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  clearTimeout(killer);
  return { code, out, err };
}

/** The console's line; `--server` because a test app's BASE_URL has no port. */
export const INSTALL_LINE = 'curl -fsSL "$URL/install.sh" | sh -s -- --server "$URL" "$@"';
