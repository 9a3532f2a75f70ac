// Prompt templates: a named style that wraps the user's subject. Usable by name when creating a
// prompt ({ template: 'watercolor', text: 'a lighthouse at dusk' }).
export type PromptTemplate = { name: string; title: string; text: string; negativeText?: string; style: string }

export const TEMPLATES: readonly PromptTemplate[] = [
  {
    name: 'photo',
    title: 'Photograph',
    text: 'a high-resolution photograph of {subject}, natural light, sharp focus',
    negativeText: 'blurry, distorted, text, watermark',
    style: 'photographic',
  },
  {
    name: 'watercolor',
    title: 'Watercolour',
    text: 'a loose watercolour painting of {subject}, soft washes, paper texture',
    negativeText: 'photo, text',
    style: 'watercolor',
  },
  {
    name: 'line-art',
    title: 'Line art (e-ink friendly)',
    text: 'clean black ink line art of {subject}, high contrast, white background, no shading',
    negativeText: 'colour, gradient, text',
    style: 'line-art',
  },
  {
    name: 'woodcut',
    title: 'Woodcut print',
    text: 'a bold woodcut print of {subject}, strong black shapes, carved texture',
    negativeText: 'colour, text',
    style: 'woodcut',
  },
  {
    name: 'poster',
    title: 'Flat poster',
    text: 'a flat vector poster of {subject}, limited palette of six bold colours',
    negativeText: 'photo, noise, text',
    style: 'poster',
  },
]

export const STYLES = [...new Set(TEMPLATES.map((t) => t.style))]

export function findTemplate(name: string): PromptTemplate | undefined {
  return TEMPLATES.find((t) => t.name === name)
}

export function renderTemplate(t: PromptTemplate, subject: string): string {
  return t.text.replace('{subject}', subject.trim())
}
