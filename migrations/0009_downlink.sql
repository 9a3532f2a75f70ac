CREATE TABLE "device_downlink" (
	"device_id" text PRIMARY KEY NOT NULL,
	"last_seq" bigint DEFAULT 0 NOT NULL
) WITH (fillfactor = 50);
--> statement-breakpoint
CREATE TABLE "device_message" (
	"device_id" text NOT NULL,
	"seq" bigint NOT NULL,
	"kind" text NOT NULL,
	"payload" jsonb NOT NULL,
	"retain" boolean DEFAULT false NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"delivered_at" timestamp (3) with time zone,
	CONSTRAINT "device_message_device_id_seq_pk" PRIMARY KEY("device_id","seq")
) WITH (fillfactor = 70);
--> statement-breakpoint
ALTER TABLE "device_downlink" ADD CONSTRAINT "device_downlink_device_id_device_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."device"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "device_message" ADD CONSTRAINT "device_message_device_id_device_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."device"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
-- Keep the first disconnect of each connection before the index makes them unique.
DELETE FROM "event" AS a USING "event" AS b
WHERE a.type = 'device.disconnected' AND b.type = 'device.disconnected'
  AND a.device_id = b.device_id AND a.data->>'connectionId' = b.data->>'connectionId'
  AND (a.created_at, a.id) > (b.created_at, b.id);--> statement-breakpoint
CREATE UNIQUE INDEX "event_disconnect_connection_uq" ON "event" USING btree ("device_id",(data->>'connectionId')) WHERE type = 'device.disconnected';