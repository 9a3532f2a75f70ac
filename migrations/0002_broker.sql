CREATE TABLE "device_command" (
	"id" text PRIMARY KEY NOT NULL,
	"device_id" text NOT NULL,
	"user_id" text,
	"command" text NOT NULL,
	"args" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"status" text DEFAULT 'sent' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"acked_at" timestamp with time zone,
	"result" jsonb
);
--> statement-breakpoint
ALTER TABLE "device" ADD COLUMN "desired_config_version" integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE "device" ADD COLUMN "desired_image_id" text;--> statement-breakpoint
ALTER TABLE "device" ADD COLUMN "reported" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "device_command" ADD CONSTRAINT "device_command_device_id_device_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."device"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "device_command_device_idx" ON "device_command" USING btree ("device_id","created_at");