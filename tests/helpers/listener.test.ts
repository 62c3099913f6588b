import { describe, expect, test } from "bun:test";
import { startListening } from "./listener";

describe("startListening (the tests' own servers)", () => {
  test("a server that exits before its ready line is started again on another port", async () => {
    const ports: number[] = [];
    const server = await startListening({
      command: (port) => {
        ports.push(port);
        return ports.length === 1
          ? ["sh", "-c", "echo 'Address already in use' >&2; exit 255"]
          : ["sh", "-c", `echo "listening on $0"; exec sleep 30`, String(port)];
      },
      ready: (port) => `listening on ${port}`,
    });
    expect(ports).toHaveLength(2);
    expect(server.port).toBe(ports[1]!);
    expect(server.log()).toContain(`listening on ${ports[1]}`);
    await server.stop();
    expect(server.process.exitCode ?? server.process.signalCode).toBeTruthy();
  });

  test("five failures are one error carrying what each attempt printed", async () => {
    let attempts = 0;
    const failed = startListening({
      command: () => {
        attempts++;
        return ["sh", "-c", `echo "no luck $0" >&2; exit 1`, String(attempts)];
      },
      ready: () => "never",
    });
    await expect(failed).rejects.toThrow(/no luck 1[\s\S]*no luck 5/);
    expect(attempts).toBe(5);
  });
});
