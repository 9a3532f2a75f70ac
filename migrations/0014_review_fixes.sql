ALTER TABLE "device_schedule" ADD COLUMN "version" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Items added before this column were added by the playlist's creator (only they could, with their own uploads and prompts).
ALTER TABLE "playlist_item" ADD COLUMN "added_by" text;--> statement-breakpoint
UPDATE "playlist_item" AS i SET "added_by" = p."user_id" FROM "playlist" AS p WHERE p."id" = i."playlist_id";--> statement-breakpoint
ALTER TABLE "playlist_item" ALTER COLUMN "added_by" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "playlist_item" ADD CONSTRAINT "playlist_item_added_by_user_id_fk" FOREIGN KEY ("added_by") REFERENCES "public"."user"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "device_log_received_idx" ON "device_log" USING btree ("received_at");