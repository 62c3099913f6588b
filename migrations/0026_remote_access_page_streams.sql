CREATE TABLE "remote_access_page_streams" (
	"id" uuid PRIMARY KEY NOT NULL,
	"lease_id" uuid NOT NULL,
	"opened_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "remote_access_page_streams" ADD CONSTRAINT "remote_access_page_streams_lease_id_remote_access_leases_id_fk" FOREIGN KEY ("lease_id") REFERENCES "public"."remote_access_leases"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "remote_access_page_streams_lease_idx" ON "remote_access_page_streams" USING btree ("lease_id");--> statement-breakpoint
CREATE INDEX "remote_access_page_streams_expiry_idx" ON "remote_access_page_streams" USING btree ("expires_at");