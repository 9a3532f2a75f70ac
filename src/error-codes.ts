// Every code an AppError carries, with its HTTP status and default message: the one list a client
// author reads. One object literal rather than per-domain files merged by spreading, because a code
// defined twice is then a compile error instead of a silent override, and the shared codes
// (UNAUTHORIZED, FORBIDDEN, NOT_FOUND, VALIDATION_ERROR…) have no owning domain.
// A throw site may override the message when it carries details (a model id, a limit).

export type ErrorSpec = { readonly status: number; readonly message: string }

export const ERRORS = {
  // Request shape, shared by every domain
  VALIDATION_ERROR: { status: 400, message: 'The request is not valid' },
  INVALID_JSON: { status: 400, message: 'Malformed JSON body' },
  INVALID_VALUE: { status: 400, message: 'A value in the request is not acceptable' },
  REFERENCE_GONE: { status: 409, message: 'Something this request refers to was deleted while it ran; try again' },
  BODY_TOO_DEEP: { status: 400, message: 'JSON nests arrays and objects too deeply' },
  INVALID_CHARACTER: { status: 400, message: 'Text may not contain the NUL character (U+0000)' },
  INVALID_CURSOR: { status: 400, message: 'cursor is not one this API returned' },
  UNAUTHORIZED: { status: 401, message: 'A valid session is required' },
  FORBIDDEN: { status: 403, message: 'You may not do this' },
  NOT_FOUND: { status: 404, message: 'Not found' },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'The request is too large' },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    message: 'Only PNG, JPEG, WebP, GIF and AVIF images are accepted (the type is read from the file itself)',
  },
  INTERNAL_ERROR: { status: 500, message: 'Internal server error' },
  STORAGE_FULL: { status: 507, message: 'The server is out of storage space: nothing was stored. Try again later' },
  CONSOLE_NOT_BUILT: { status: 503, message: 'The web console is not built: run `npm run build:web` (npm start does it)' },

  // Auth
  INVALID_TOKEN: { status: 400, message: 'The token is neither a session token nor one signed by this service' },
  FORBIDDEN_ORIGIN: { status: 403, message: 'Requests with a session cookie must come from this service or a trusted origin' },
  USER_NOT_FOUND: { status: 404, message: 'User not found' },
  RATE_LIMITED: { status: 429, message: 'This API key has made too many requests; try again later' },

  // Devices and pairing
  DEVICE_NOT_FOUND: { status: 404, message: 'Device not found' },
  INVALID_CODE: { status: 404, message: 'No pending device matches this code' },
  CODE_ALREADY_USED: { status: 409, message: 'This code has already been used' },
  CODE_EXPIRED: { status: 410, message: 'This code has expired; restart pairing on the device' },
  DEVICE_ALREADY_PAIRED: {
    status: 409,
    message: 'This frame is already one of your devices: claim again with replace: true to give that device this pairing',
  },
  DEVICE_RECORD_UNREADABLE: {
    status: 409,
    message: 'The stored record of this device cannot be read: delete it, or pair the device again',
  },
  TOO_MANY_ATTEMPTS: { status: 429, message: 'Too many wrong codes, try again later' },
  SLOW_DOWN: { status: 429, message: 'Poll less often' },

  // Prompts and generation
  UNKNOWN_TEMPLATE: { status: 400, message: 'Unknown template' },
  UNKNOWN_MODEL: { status: 400, message: 'Unknown model' },
  PROVIDER_NOT_CONFIGURED: { status: 400, message: "The model's provider has no key configured" },
  INSUFFICIENT_BALANCE: { status: 402, message: 'Your balance is too low for this model' },
  PROMPT_NOT_FOUND: { status: 404, message: 'Prompt not found' },
  JOB_NOT_FOUND: { status: 404, message: 'Generation job not found' },
  JOB_FINISHED: { status: 409, message: 'The job has already finished' },

  // Playlists and schedules
  PLAYLIST_NOT_FOUND: { status: 404, message: 'Playlist not found' },
  PLAYLIST_ITEM_NOT_FOUND: { status: 404, message: 'No such item in this playlist' },
  PLAYLIST_FULL: { status: 409, message: 'A playlist holds at most 500 items' },
  PLAYLIST_IN_USE: { status: 409, message: "The playlist is in a device's schedule; change the schedule first" },
  SCHEDULE_NOT_FOUND: { status: 404, message: 'This device has no schedule' },

  // Screens
  SCREEN_NOT_FOUND: { status: 404, message: 'Screen not found' },
  SCREEN_IN_USE: { status: 409, message: 'The screen is an item of a playlist; remove it there first' },
  SCREEN_TEMPLATE_INVALID: { status: 422, message: "The screen's template does not parse" },
  SCREEN_RENDER_FAILED: { status: 422, message: "The screen's template failed to render" },
  SCREEN_RENDER_TIMEOUT: { status: 422, message: 'The screen took too long to render (a loop without end?)' },
  SCREEN_RENDER_MEMORY: { status: 422, message: 'The screen used too much memory while rendering' },
  SCREEN_RENDERER_UNAVAILABLE: {
    status: 422,
    message: 'The screen asks for Chromium, which is not installed on this server (CHROMIUM_PATH); use the takumi renderer',
  },
  SCREEN_NO_DATA: { status: 422, message: "The screen's data URL has not answered yet" },
  SCREEN_SOURCE_FAILED: { status: 422, message: "The screen's data URL did not answer usably" },
  SCREEN_SOURCE_TIMEOUT: { status: 422, message: "The screen's data URL took too long to answer" },
  SCREEN_SOURCE_TOO_LARGE: { status: 422, message: "The screen's data URL answered with too much" },
  SCREEN_SOURCE_NOT_JSON: { status: 422, message: "The screen's data URL did not answer JSON" },
  SCREEN_SOURCE_FORBIDDEN: {
    status: 422,
    message: 'The data URL leads to a loopback, link-local or private address, which only an admin may allow for a screen',
  },
  RECIPE_INVALID: { status: 400, message: 'The TRMNL recipe is broken or incomplete' },
  RECIPE_UNSUPPORTED: { status: 422, message: 'The TRMNL recipe uses a feature this service does not have' },
  SCREEN_BUSY: { status: 503, message: 'Screens are being rendered at capacity; try again shortly' },

  // Firmware
  FIRMWARE_NOT_FOUND: { status: 404, message: 'No such firmware release' },
  FIRMWARE_VERSION_EXISTS: { status: 409, message: 'This model already has a release with that version' },
  FIRMWARE_IN_USE: { status: 409, message: 'The release is a rollout target, pinned, or was offered to devices' },
  FIRMWARE_CHANNEL_MISMATCH: { status: 409, message: 'A stable rollout may only target a stable release' },
  NO_FIRMWARE_OFFER: { status: 404, message: 'Nothing is offered to this device' },

  // Images, uploads and stored files
  INVALID_DISPLAY_PROFILE: { status: 400, message: 'The display profile is not valid' },
  DISPLAY_TOO_LARGE: { status: 400, message: 'The display is larger than any panel this service serves' },
  EMPTY_FILE: { status: 400, message: 'The file is empty' },
  TOO_MANY_FILES: { status: 400, message: 'Send exactly one file' },
  TOO_MANY_PARTS: { status: 400, message: 'Too many form fields' },
  INVALID_MULTIPART: { status: 400, message: 'Malformed multipart body' },
  FILE_REQUIRED: { status: 400, message: 'The form has no file part' },
  INVALID_KEY: { status: 400, message: 'Invalid object key' },
  URL_EXPIRED: { status: 403, message: 'This link has expired' },
  INVALID_SIGNATURE: { status: 403, message: 'The link signature does not match' },
  IMAGE_NOT_FOUND: { status: 404, message: 'Image not found' },
  IMAGE_TOO_LARGE: { status: 413, message: 'The image has too many pixels' },
  MULTIPART_REQUIRED: { status: 415, message: 'Send the file as multipart/form-data' },
  INVALID_IMAGE: { status: 422, message: 'The image could not be decoded' },

  // Invitations
  EMAIL_NOT_VERIFIED: { status: 403, message: 'Verify your e-mail address before accepting the invitation' },
  NOT_INVITATION_RECIPIENT: { status: 403, message: 'This invitation was sent to another e-mail address' },
  INVITATION_NOT_FOUND: { status: 404, message: 'No such invitation' },
  INVITATION_NOT_PENDING: { status: 409, message: 'The invitation could not be accepted' },
  INVITATION_EXPIRED: { status: 410, message: 'This invitation has expired; ask for a new one' },

  // Push notifications
  INVALID_SUBSCRIPTION: { status: 400, message: 'The push subscription is not valid' },
  PUSH_SERVICE_NOT_ALLOWED: { status: 400, message: 'The push service is not an allowed push service' },
  SUBSCRIPTION_NOT_FOUND: { status: 404, message: 'No such subscription of yours' },
} as const satisfies Record<string, ErrorSpec>

export type ErrorCode = keyof typeof ERRORS
