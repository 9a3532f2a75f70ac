// Files the service reads from the project (migrations, the web console, package.json), found
// from the project root rather than from this file: the same code runs from src/ under tsx and
// bundled into dist/ by `npm start`.
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

function findRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'migrations'))) return dir
    if (dirname(dir) === dir) throw new Error(`no project root (package.json beside migrations/) above ${from}`)
  }
}

const projectRoot = findRoot(dirname(fileURLToPath(import.meta.url)))

export const fromRoot = (...parts: string[]) => join(projectRoot, ...parts)
