/**
 * The HTTP floor of bench:heartbeat (floor.ts): a bare `Bun.serve` that reads and parses each JSON body
 * and answers as a heartbeat that delivers no command does. No Outpost code: what any server on these
 * cores pays per heartbeat before doing anything with it. Prints its port, then serves until killed.
 */
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const body: unknown = await request.json();
    if (typeof body !== "object" || body === null) return new Response("not a JSON object", { status: 400 });
    return Response.json({ data: { commands: [] } });
  },
});
console.log(server.port);
