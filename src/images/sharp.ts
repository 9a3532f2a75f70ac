// sharp (and libvips with it, about 30 MiB resident) is loaded when the first image is decoded or
// drawn, not at start: a service that never converts an image does not carry it.
import type sharpType from 'sharp'

let loaded: Promise<typeof sharpType> | undefined

export function loadSharp(): Promise<typeof sharpType> {
  loaded ??= import('sharp').then((m) => m.default)
  return loaded
}
