import { Elysia } from "elysia";
import type { AppContext } from "../platform/context";
import type { LiveClient } from "./hub";

const encoder = new TextEncoder();

/** GET /live/events: the console's Server-Sent Events stream (events `fleet`, `device` and `rollout`). */
export function liveRoutes(ctx: AppContext) {
  return new Elysia({ name: "live" }).use(ctx.access).get(
    "/live/events",
    ({ request, server }) => {
      // A stream stays open for as long as the page does: no idle timeout for it.
      server?.timeout?.(request, 0);
      let unsubscribe = () => {};
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          let open = true;
          const client: LiveClient = {
            send: (event, data) => {
              if (open) controller.enqueue(encoder.encode(`event: ${event}\ndata: ${data}\n\n`));
            },
            comment: (text) => {
              if (open) controller.enqueue(encoder.encode(`: ${text}\n\n`));
            },
            close: () => {
              if (!open) return;
              open = false;
              unsubscribe();
              controller.close();
            },
          };
          controller.enqueue(encoder.encode("retry: 3000\n: connected\n\n"));
          unsubscribe = ctx.liveHub.subscribe(client);
          request.signal.addEventListener("abort", () => {
            open = false;
            unsubscribe();
          });
        },
        cancel() {
          unsubscribe();
        },
      });
      return new Response(stream, {
        headers: {
          "content-type": "text/event-stream; charset=utf-8",
          "cache-control": "no-store",
          "x-accel-buffering": "no",
        },
      });
    },
    { access: "viewer" },
  );
}
