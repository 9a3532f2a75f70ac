CREATE TABLE "device_firmware" (
	"device_id" text PRIMARY KEY NOT NULL,
	"channel" text DEFAULT 'stable' NOT NULL,
	"pinned_release_id" text,
	"release_id" text,
	"state" text,
	"reason" text,
	"offered_at" timestamp (3) with time zone,
	"updated_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "firmware_release" (
	"id" text PRIMARY KEY NOT NULL,
	"model" text NOT NULL,
	"version" text NOT NULL,
	"channel" text NOT NULL,
	"notes" text DEFAULT '' NOT NULL,
	"object_key" text NOT NULL,
	"sha256" text NOT NULL,
	"size" bigint NOT NULL,
	"signature" text NOT NULL,
	"created_by" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "firmware_rollout" (
	"model" text NOT NULL,
	"channel" text NOT NULL,
	"release_id" text NOT NULL,
	"percent" integer NOT NULL,
	"paused" boolean DEFAULT false NOT NULL,
	"halted_at" timestamp (3) with time zone,
	"max_failure_share" real NOT NULL,
	"min_attempts" integer NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_by" text,
	CONSTRAINT "firmware_rollout_model_channel_pk" PRIMARY KEY("model","channel")
);
--> statement-breakpoint
ALTER TABLE "notification_preference" ADD COLUMN "firmware_failed" boolean DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE "device_firmware" ADD CONSTRAINT "device_firmware_device_id_device_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."device"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "device_firmware" ADD CONSTRAINT "device_firmware_pinned_release_id_firmware_release_id_fk" FOREIGN KEY ("pinned_release_id") REFERENCES "public"."firmware_release"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "device_firmware" ADD CONSTRAINT "device_firmware_release_id_firmware_release_id_fk" FOREIGN KEY ("release_id") REFERENCES "public"."firmware_release"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "firmware_release" ADD CONSTRAINT "firmware_release_created_by_user_id_fk" FOREIGN KEY ("created_by") REFERENCES "public"."user"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "firmware_rollout" ADD CONSTRAINT "firmware_rollout_release_id_firmware_release_id_fk" FOREIGN KEY ("release_id") REFERENCES "public"."firmware_release"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "firmware_rollout" ADD CONSTRAINT "firmware_rollout_updated_by_user_id_fk" FOREIGN KEY ("updated_by") REFERENCES "public"."user"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "device_firmware_release_idx" ON "device_firmware" USING btree ("release_id","state");--> statement-breakpoint
CREATE INDEX "device_firmware_pin_idx" ON "device_firmware" USING btree ("pinned_release_id");--> statement-breakpoint
CREATE UNIQUE INDEX "firmware_release_model_version_uq" ON "firmware_release" USING btree ("model","version");