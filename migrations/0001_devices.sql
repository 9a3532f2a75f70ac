CREATE TABLE "device" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"user_id" text NOT NULL,
	"organization_id" text,
	"pin_code" text NOT NULL,
	"is_synced" boolean DEFAULT false NOT NULL,
	"icon" text DEFAULT 'frame' NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"color" text DEFAULT '#000000' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"is_active" boolean DEFAULT false NOT NULL,
	"selected_model" text DEFAULT 'local' NOT NULL,
	"display" jsonb NOT NULL,
	"info" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"last_seen_at" timestamp with time zone,
	"secret_hash" text,
	"secret_issued_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "device_init" (
	"id" text PRIMARY KEY NOT NULL,
	"device_code_hash" text NOT NULL,
	"user_code" text NOT NULL,
	"pin_code" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"interval" integer NOT NULL,
	"last_polled_at" timestamp with time zone,
	"failed_attempts" integer DEFAULT 0 NOT NULL,
	"display" jsonb NOT NULL,
	"info" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"user_id" text,
	"organization_id" text,
	"event_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"decided_at" timestamp with time zone,
	"credentials_issued_at" timestamp with time zone,
	CONSTRAINT "device_init_user_code_unique" UNIQUE("user_code")
);
--> statement-breakpoint
CREATE TABLE "event" (
	"id" text PRIMARY KEY NOT NULL,
	"type" text NOT NULL,
	"device_id" text,
	"user_id" text,
	"organization_id" text,
	"data" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "device" ADD CONSTRAINT "device_user_id_user_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."user"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "device" ADD CONSTRAINT "device_organization_id_organization_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organization"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "device_init" ADD CONSTRAINT "device_init_user_id_user_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."user"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "device_init" ADD CONSTRAINT "device_init_organization_id_organization_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organization"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "device_user_id_idx" ON "device" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "device_organization_id_idx" ON "device" USING btree ("organization_id");--> statement-breakpoint
CREATE UNIQUE INDEX "device_init_pending_pin_uq" ON "device_init" USING btree ("pin_code") WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX "device_init_status_expires_idx" ON "device_init" USING btree ("status","expires_at");--> statement-breakpoint
CREATE INDEX "event_device_created_idx" ON "event" USING btree ("device_id","created_at","id");--> statement-breakpoint
CREATE INDEX "event_type_idx" ON "event" USING btree ("type");