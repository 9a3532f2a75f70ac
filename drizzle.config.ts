import { defineConfig } from 'drizzle-kit'

export default defineConfig({
  dialect: 'postgresql',
  schema: [
    './src/db/schema.ts',
    './src/devices/tables.ts',
    './src/events/tables.ts',
    './src/prompts/tables.ts',
    './src/generation/tables.ts',
    './src/images/tables.ts',
    './src/credits/tables.ts',
    './src/settings/tables.ts',
    './src/notifications/tables.ts',
    './src/downlink/tables.ts',
    './src/schedules/tables.ts',
    './src/device-logs/tables.ts',
    './src/health/tables.ts',
    './src/firmware/tables.ts',
    './src/trmnl/tables.ts',
    './src/screens/tables.ts',
  ],
  out: './migrations',
})
