CREATE TABLE "device_log" (
	"id" text PRIMARY KEY NOT NULL,
	"device_id" text NOT NULL,
	"at" timestamp (3) with time zone NOT NULL,
	"received_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"level" text NOT NULL,
	"message" text NOT NULL,
	"fields" jsonb
);
--> statement-breakpoint
CREATE TABLE "device_log_stats" (
	"device_id" text PRIMARY KEY NOT NULL,
	"accepted" bigint DEFAULT 0 NOT NULL,
	"dropped_rate" bigint DEFAULT 0 NOT NULL,
	"dropped_size" bigint DEFAULT 0 NOT NULL,
	"dropped_invalid" bigint DEFAULT 0 NOT NULL,
	"pruned" bigint DEFAULT 0 NOT NULL,
	"last_at" timestamp (3) with time zone
);
--> statement-breakpoint
ALTER TABLE "device_log" ADD CONSTRAINT "device_log_device_id_device_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."device"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "device_log_stats" ADD CONSTRAINT "device_log_stats_device_id_device_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."device"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "device_log_device_at_idx" ON "device_log" USING btree ("device_id","at","id");