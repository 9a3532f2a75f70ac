// The console's build (npm start builds it when stale, see src/web/build.ts) and its dev server
// (`npm run dev:web`: live reload on :5173, API, account routes and MQTT over WebSocket proxied
// to the service on :3000 or API_URL).
import react from '@vitejs/plugin-react'
import { defineConfig } from 'vite'

const api = process.env.API_URL ?? 'http://localhost:3000'

export default defineConfig({
  plugins: [react()],
  base: '/',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // Hashed file names under /assets: served with a year's cache (src/web/routes.ts).
    assetsDir: 'assets',
    sourcemap: false,
  },
  server: {
    port: 5173,
    proxy: {
      '/api': api,
      '/files': api,
      '/get-session': api,
      '/mqtt': { target: api.replace(/^http/, 'ws'), ws: true },
    },
  },
})
