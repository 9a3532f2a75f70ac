CREATE TABLE "trmnl_device" (
	"device_id" text PRIMARY KEY NOT NULL,
	"mac" text NOT NULL,
	"api_key_hash" text NOT NULL,
	"friendly_id" text NOT NULL,
	"model" text,
	"firmware" text,
	"refresh_rate" integer,
	"rssi" integer,
	"battery_voltage" real,
	"last_filename" text,
	"shown_image_id" text,
	"public_key" text,
	"last_signed_at" bigint,
	"last_polled_at" timestamp (3) with time zone,
	"next_poll_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "trmnl_device_api_key_uq" ON "trmnl_device" USING btree ("api_key_hash");--> statement-breakpoint
CREATE INDEX "trmnl_device_mac_idx" ON "trmnl_device" USING btree ("mac");--> statement-breakpoint
CREATE INDEX "trmnl_device_next_poll_idx" ON "trmnl_device" USING btree ("next_poll_at");