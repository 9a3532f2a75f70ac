CREATE TABLE "screen" (
	"id" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"organization_id" text,
	"name" text NOT NULL,
	"template" text,
	"builtin" text,
	"css" text,
	"variables" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"time_zone" text DEFAULT 'UTC' NOT NULL,
	"token_hash" text NOT NULL,
	"source_url" text,
	"source_every_seconds" integer,
	"source_headers" text,
	"source_header_names" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"allow_private" boolean DEFAULT false NOT NULL,
	"data" jsonb,
	"data_at" timestamp (3) with time zone,
	"next_fetch_at" timestamp (3) with time zone,
	"last_error" jsonb,
	"rendered_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "screen_render" (
	"screen_id" text NOT NULL,
	"key" text NOT NULL,
	"image_id" text NOT NULL,
	"png_sha256" text NOT NULL,
	"sha256" text NOT NULL,
	"rendered_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "screen_render_screen_id_key_pk" PRIMARY KEY("screen_id","key")
);
--> statement-breakpoint
ALTER TABLE "screen" ADD CONSTRAINT "screen_user_id_user_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."user"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "screen" ADD CONSTRAINT "screen_organization_id_organization_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organization"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "screen_render" ADD CONSTRAINT "screen_render_screen_id_screen_id_fk" FOREIGN KEY ("screen_id") REFERENCES "public"."screen"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "screen_user_id_idx" ON "screen" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "screen_organization_id_idx" ON "screen" USING btree ("organization_id");--> statement-breakpoint
CREATE INDEX "screen_next_fetch_at_idx" ON "screen" USING btree ("next_fetch_at");--> statement-breakpoint
CREATE INDEX "screen_render_image_idx" ON "screen_render" USING btree ("image_id");