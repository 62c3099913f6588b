CREATE TABLE "tunnel_instances" (
	"instance" text PRIMARY KEY NOT NULL,
	"http_host" text NOT NULL,
	"http_port" integer NOT NULL,
	"mux_host" text NOT NULL,
	"mux_port" integer NOT NULL,
	"seen_at" timestamp with time zone DEFAULT now() NOT NULL
);
