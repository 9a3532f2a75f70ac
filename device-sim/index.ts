// The simulator as a library, for tests and benchmarks that drive devices in-process.
export { SimDevice, PairingFailedError, ClaimRefusedError } from './device.js'
export type {
  SimDeviceOptions,
  SimDeviceEvents,
  SimStats,
  StatusReport,
  ImageMessage,
  CommandMessage,
  ConfigMessage,
  PromptMessage,
  PairingInfo,
} from './device.js'
export { Fleet, runFleet } from './fleet.js'
export { TrmnlSimDevice, checkBmp, checkPng, checkPngFor } from './trmnl.js'
export type { TrmnlSimOptions, TrmnlSimEvents } from './trmnl.js'
export type { FleetOptions, FleetStats } from './fleet.js'
export { ServiceApi, ApiError, UnreachableError } from './api.js'
export { PROFILES, PROFILE_NAMES, resolveProfile } from './profiles.js'
export type { DisplayProfile, Palette } from './profiles.js'
export { loadState, StateFileError } from './state.js'
export type { SimState, Credentials } from './state.js'
export { renderPreview, decodeBmp } from './preview.js'
export { EXIT, main } from './cli.js'
