// Renders a built-in screen the way the screens backend does (liquidjs, with `data`, `variables`
// and `device` in scope), to HTML the tests read facts from.
import { Liquid } from 'liquidjs'
import type { BuiltinScreen, PrepareInput } from '../../src/screens/builtin/index.js'

const liquid = new Liquid({ strictFilters: true })

export function renderBuiltin(screen: BuiltinScreen, input: PrepareInput): { html: string; data: Record<string, unknown> } {
  const data = screen.prepare(input)
  const html = liquid.parseAndRenderSync(screen.template, { data, variables: input.variables, device: input.device })
  return { html, data }
}

/** The text of the HTML with tags removed and whitespace collapsed: what a reader of the screen sees. */
export function visibleText(html: string): string {
  return html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ')
    .trim()
}
