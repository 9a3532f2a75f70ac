-- Rows whose device is already gone (written before these keys existed, e.g. by a job that stored
-- its image while the device was being deleted) would make the constraints fail: treat them as the
-- device deletion would have.
DELETE FROM "prompt" WHERE "device_id" IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "device" WHERE "device"."id" = "prompt"."device_id");--> statement-breakpoint
UPDATE "generation_job" SET "device_id" = NULL WHERE "device_id" IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "device" WHERE "device"."id" = "generation_job"."device_id");--> statement-breakpoint
UPDATE "image" SET "device_id" = NULL WHERE "device_id" IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "device" WHERE "device"."id" = "image"."device_id");--> statement-breakpoint
ALTER TABLE "prompt" ADD CONSTRAINT "prompt_device_id_device_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."device"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "generation_job" ADD CONSTRAINT "generation_job_device_id_device_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."device"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "image" ADD CONSTRAINT "image_device_id_device_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."device"("id") ON DELETE set null ON UPDATE no action;
