/**
 * `--name value` on the command line, else the environment variable, else the default; anything but a
 * number ≥ 0 ends the benchmark with one line naming the flag (`bench` is the command's name).
 */
export function knob(bench: string, flag: string, env: string, fallback: number): number {
  const i = process.argv.indexOf(`--${flag}`);
  const raw = i >= 0 ? process.argv[i + 1] : process.env[env];
  const value = raw === undefined ? fallback : Number(raw);
  if (!Number.isFinite(value) || value < 0) {
    console.error(`${bench}: --${flag} (${env}) must be a number ≥ 0, not ${JSON.stringify(raw)}`);
    process.exit(2);
  }
  return value;
}
