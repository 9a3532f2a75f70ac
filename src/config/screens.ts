// Screens: how they are rendered (worker threads bounded in time and memory; Chromium where
// installed, for templates that ask for it) and how their data
// URLs are fetched (bounded in time and size, polled no more often than a floor).
import { z } from 'zod'
import { type Section, flag, integer, variable } from './variables.js'

export const screens = {
  title: 'Screens',
  intro: 'See [screens.md](screens.md).',
  variables: {
    screens: {
      renderWorkers: variable(
        'SCREEN_RENDER_WORKERS',
        integer(1, 16, 1),
        'worker threads rendering screens (template, HTML to image) at once',
      ),
      renderTimeoutMs: variable(
        'SCREEN_RENDER_TIMEOUT_MS',
        integer(100, 60_000, 5000),
        "the longest a screen's render may take; the worker is ended after it and the screen records the error",
      ),
      renderMemoryMb: variable(
        'SCREEN_RENDER_MEMORY_MB',
        integer(16, 4096, 128),
        "a render worker's JavaScript heap limit (worker_threads resourceLimits): a template that fills it ends that worker only",
      ),
      chromiumPath: variable(
        'CHROMIUM_PATH',
        z.string().trim().min(1).default('/usr/bin/chromium'),
        "the Chromium executable for screens with `renderer: 'chromium'` (full CSS); when it does not exist, such screens are refused with SCREEN_RENDERER_UNAVAILABLE",
      ),
      chromiumPages: variable(
        'SCREEN_CHROMIUM_PAGES',
        integer(1, 16, 2),
        'screens Chromium draws at once (one shared browser, a page each); the others wait their turn',
      ),
      fetchTimeoutMs: variable(
        'SCREEN_FETCH_TIMEOUT_MS',
        integer(100, 60_000, 10_000),
        "the longest a data URL's answer may take, all of it",
      ),
      fetchMaxBytes: variable('SCREEN_FETCH_MAX_BYTES', integer(1024, 50_000_000, 1_000_000), 'the largest answer a data URL may give'),
      minPollSeconds: variable(
        'SCREEN_MIN_POLL_SECONDS',
        integer(1, 86_400, 60),
        "the shortest interval a screen's data URL is polled at (everySeconds below it is refused); tests lower it",
      ),
      pollTickMs: variable('SCREEN_POLL_TICK_MS', integer(50, 600_000, 5000), 'how often the due data URLs are looked for'),
      allowPrivateSources: variable(
        'SCREEN_ALLOW_PRIVATE_SOURCES',
        flag(false),
        'lets every user (not only admins) fetch data URLs on loopback, link-local and private addresses; for tests and closed networks only',
      ),
    },
  },
} satisfies Section
