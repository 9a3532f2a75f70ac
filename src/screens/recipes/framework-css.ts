// Our own stylesheet for the class names TRMNL's design framework gives recipes (written from the
// class names recipes use, not from TRMNL's CSS). It is made for the HTML-to-image renderer: class
// selectors only (the renderer inlines them into style attributes), flexbox only (satori has no
// grid, floats or tables), px sizes, Inter, and black, white and greys for e-paper. `.screen`
// takes its size from the style attribute the importer writes (the frame's width and height).

const sizes = { xxsmall: 12, xsmall: 16, small: 20, base: 26, large: 38, xlarge: 48, xxlarge: 64, xxxlarge: 96 }
const gaps = { none: 0, xsmall: 4, small: 8, medium: 16, large: 24, xlarge: 32, xxlarge: 48 }
const greys = {
  10: '#1a1a1a',
  15: '#262626',
  20: '#333333',
  25: '#404040',
  30: '#4d4d4d',
  35: '#595959',
  40: '#666666',
  45: '#737373',
  50: '#808080',
  55: '#8c8c8c',
  60: '#999999',
  65: '#a6a6a6',
  70: '#b3b3b3',
  75: '#bfbfbf',
}

const rule = (selector: string, body: string) => `.${selector} { ${body} }`

function generated(): string[] {
  const out: string[] = []
  for (const [name, px] of Object.entries(sizes)) {
    out.push(rule(`value--${name}`, `font-size: ${px}px; line-height: ${Math.round(px * 1.15)}px;`))
  }
  for (const [name, px] of Object.entries(gaps)) {
    out.push(rule(`gap--${name}`, `gap: ${px}px;`))
    for (const [side, prop] of Object.entries({
      mt: 'margin-top',
      mb: 'margin-bottom',
      ml: 'margin-left',
      mr: 'margin-right',
      p: 'padding',
      px: 'padding-left',
      py: 'padding-top',
    })) {
      // px/py set both sides of their axis.
      const extra = side === 'px' ? ` padding-right: ${px}px;` : side === 'py' ? ` padding-bottom: ${px}px;` : ''
      out.push(rule(`${side}--${name}`, `${prop}: ${px}px;${extra}`))
    }
  }
  for (const [shade, hex] of Object.entries(greys)) {
    out.push(rule(`bg--gray-${shade}`, `background-color: ${hex};`))
    out.push(rule(`text--gray-${shade}`, `color: ${hex};`))
  }
  for (let n = 1; n <= 6; n++) out.push(rule(`col--span-${n}`, `width: ${Math.round((n / 6) * 10000) / 100}%;`))
  for (let n = 1; n <= 6; n++)
    out.push(rule(`grid--cols-${n}`, n === 1 ? 'flex-direction: column;' : 'flex-direction: row; flex-wrap: wrap;'))
  return out
}

export const trmnlFrameworkCss: string = [
  // The page and the view the importer wraps every recipe in.
  rule('environment', 'display: flex; font-family: Inter; color: #000000; background-color: #ffffff;'),
  rule('trmnl', 'display: flex;'),
  rule('screen', 'display: flex; flex-direction: column; padding: 10px; background-color: #ffffff; overflow: hidden;'),
  rule('screen--no-bleed', 'padding: 0px;'),
  rule('dark-mode', 'background-color: #000000; color: #ffffff;'),
  rule('view', 'display: flex; flex-direction: column; flex: 1; overflow: hidden;'),
  rule('view--full', 'width: 100%; height: 100%;'),
  // Layout: the content area above the title bar.
  rule(
    'layout',
    'display: flex; flex: 1; flex-direction: row; align-items: center; justify-content: center; gap: 16px; padding: 16px; overflow: hidden;',
  ),
  rule('layout--col', 'flex-direction: column;'),
  rule('layout--row', 'flex-direction: row;'),
  rule('layout--left', 'justify-content: flex-start;'),
  rule('layout--right', 'justify-content: flex-end;'),
  rule('layout--center', 'justify-content: center; align-items: center;'),
  rule('layout--center-x', 'justify-content: center;'),
  rule('layout--center-y', 'align-items: center;'),
  rule('layout--top', 'align-items: flex-start;'),
  rule('layout--bottom', 'align-items: flex-end;'),
  rule('layout--stretch', 'align-items: stretch;'),
  rule('layout--stretch-x', 'align-self: stretch;'),
  rule('columns', 'display: flex; flex-direction: row; flex: 1; gap: 16px; width: 100%;'),
  rule('column', 'display: flex; flex-direction: column; flex: 1; gap: 8px; min-width: 0px;'),
  rule('row', 'display: flex; flex-direction: row; gap: 8px;'),
  rule('grid', 'display: flex; flex-direction: row; flex-wrap: wrap; gap: 16px; width: 100%;'),
  // The title bar along the bottom of a view.
  rule(
    'title_bar',
    'display: flex; flex-direction: row; align-items: center; height: 40px; padding: 0px 16px; gap: 10px; background-color: #000000; color: #ffffff; border-radius: 8px;',
  ),
  rule('instance', 'display: flex; font-size: 16px; color: #bfbfbf; margin-left: auto;'),
  rule('image', 'display: flex; height: 24px;'),
  // Text.
  rule('title', 'display: flex; font-size: 26px; line-height: 30px; font-weight: 700;'),
  rule('title--small', 'font-size: 20px; line-height: 24px;'),
  rule('title--large', 'font-size: 36px; line-height: 40px;'),
  rule('value', 'display: flex; font-size: 38px; line-height: 44px; font-weight: 600;'),
  rule('value--tnums', 'font-variant-numeric: tabular-nums;'),
  rule('label', 'display: flex; font-size: 16px; line-height: 20px; font-weight: 500;'),
  rule('label--small', 'font-size: 12px; line-height: 16px;'),
  rule('label--large', 'font-size: 21px; line-height: 26px;'),
  rule('label--underline', 'text-decoration: underline;'),
  rule('label--gray', 'color: #666666;'),
  rule('label--gray-out', 'color: #999999;'),
  rule('label--inverted', 'background-color: #000000; color: #ffffff; padding: 2px 6px; border-radius: 4px;'),
  rule('label--outline', 'border: 1px solid #000000; padding: 2px 6px; border-radius: 4px;'),
  rule('description', 'display: flex; font-size: 16px; line-height: 22px;'),
  rule('text--left', 'text-align: left; justify-content: flex-start;'),
  rule('text--center', 'text-align: center; justify-content: center;'),
  rule('text--right', 'text-align: right; justify-content: flex-end;'),
  rule('text--black', 'color: #000000;'),
  rule('text--white', 'color: #ffffff;'),
  rule('text--gray', 'color: #808080;'),
  rule('text--bold', 'font-weight: 700;'),
  rule('text--nowrap', 'white-space: nowrap;'),
  // Items: a row with an optional meta strip and its content.
  rule('item', 'display: flex; flex-direction: row; gap: 12px; width: 100%;'),
  rule(
    'meta',
    'display: flex; flex-direction: column; align-items: center; width: 10px; min-height: 100%; background-color: #000000; border-radius: 2px;',
  ),
  rule('index', 'display: flex; font-size: 12px; color: #ffffff;'),
  rule('content', 'display: flex; flex-direction: column; flex: 1; gap: 2px; min-width: 0px;'),
  rule('content--center', 'align-items: center; text-align: center;'),
  rule('icon', 'display: flex; width: 24px; height: 24px;'),
  // Flex utilities.
  rule('flex', 'display: flex;'),
  rule('flex--row', 'flex-direction: row;'),
  rule('flex--col', 'flex-direction: column;'),
  rule('flex--wrap', 'flex-wrap: wrap;'),
  rule('flex--center', 'justify-content: center; align-items: center;'),
  rule('flex--center-x', 'justify-content: center;'),
  rule('flex--center-y', 'align-items: center;'),
  rule('flex--left', 'justify-content: flex-start;'),
  rule('flex--right', 'justify-content: flex-end;'),
  rule('flex--top', 'align-items: flex-start;'),
  rule('flex--bottom', 'align-items: flex-end;'),
  rule('flex--between', 'justify-content: space-between;'),
  rule('flex--around', 'justify-content: space-around;'),
  rule('flex--evenly', 'justify-content: space-evenly;'),
  rule('flex--stretch', 'align-items: stretch;'),
  rule('grow', 'flex-grow: 1;'),
  rule('shrink-0', 'flex-shrink: 0;'),
  rule('stretch', 'flex: 1;'),
  rule('gap', 'gap: 16px;'),
  rule('w--full', 'width: 100%;'),
  rule('h--full', 'height: 100%;'),
  // Backgrounds, borders.
  rule('bg--black', 'background-color: #000000; color: #ffffff;'),
  rule('bg--white', 'background-color: #ffffff; color: #000000;'),
  rule('bg--gray', 'background-color: #bfbfbf;'),
  rule('rounded', 'border-radius: 10px;'),
  rule('rounded--small', 'border-radius: 5px;'),
  rule('rounded--full', 'border-radius: 9999px;'),
  rule('border', 'border: 2px solid #000000;'),
  rule('outline', 'border: 1px solid #000000;'),
  rule('divider', 'display: flex; height: 2px; width: 100%; background-color: #000000;'),
  // Tables as flex rows: the renderer has no table layout, so cells share a row's width.
  rule('table', 'display: flex; flex-direction: column; width: 100%; font-size: 16px;'),
  rule('table--small', 'font-size: 12px;'),
  rule('table--large', 'font-size: 21px;'),
  rule('table--condensed', 'font-size: 14px;'),
  ...generated(),
].join('\n')
