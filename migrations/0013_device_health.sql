CREATE TABLE "device_health" (
	"device_id" text PRIMARY KEY NOT NULL,
	"last_report_at" timestamp (3) with time zone NOT NULL,
	"interval_seconds" integer,
	"battery_low" boolean DEFAULT false NOT NULL,
	"silent" boolean DEFAULT false NOT NULL
);
--> statement-breakpoint
ALTER TABLE "notification_preference" ADD COLUMN "battery_low" boolean DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE "notification_preference" ADD COLUMN "device_silent" boolean DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE "device_health" ADD CONSTRAINT "device_health_device_id_device_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."device"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "device_health_last_report_idx" ON "device_health" USING btree ("last_report_at");