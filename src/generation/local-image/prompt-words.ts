// What the local model understands of a prompt: the subjects, the time of day and the season
// it names, from a fixed English vocabulary. Words it does not know are left to the caption.

const SUBJECTS = [
  'lighthouse',
  'water',
  'mountain',
  'rock',
  'sun',
  'moon',
  'stars',
  'tree',
  'forest',
  'house',
  'city',
  'boat',
  'bird',
  'cat',
  'dog',
  'flower',
  'cloud',
  'rain',
  'snow',
  'desert',
] as const
export type Subject = (typeof SUBJECTS)[number]
export type TimeOfDay = 'dawn' | 'day' | 'dusk' | 'night'
export type Season = 'spring' | 'summer' | 'autumn' | 'winter'

/** `subjects[0]` is what the word names; the rest come with it (a lighthouse stands on a rocky coast). */
type Meaning = { subjects?: readonly Subject[]; time?: TimeOfDay; season?: Season }

const words = (list: string, meaning: Meaning) => list.split(' ').map((w) => [w, meaning] as const)

/** Each word with what it brings into the picture; plurals ending in -s are found through their singular. */
const VOCABULARY = new Map<string, Meaning>([
  ...words('lighthouse beacon', { subjects: ['lighthouse', 'water', 'rock'] }),
  ...words('sea ocean coast coastal beach shore seaside wave lake river harbour harbor bay water pond tide island pier', {
    subjects: ['water'],
  }),
  ...words('mountain mount peak alp alps summit ridge volcano glacier', { subjects: ['mountain'] }),
  ...words('rock rocky cliff stone boulder crag', { subjects: ['rock'] }),
  ...words('sun sunny sunshine sunlight', { subjects: ['sun'] }),
  ...words('sunrise daybreak', { subjects: ['sun'], time: 'dawn' }),
  ...words('sunset sundown', { subjects: ['sun'], time: 'dusk' }),
  ...words('moon moonlight lunar', { subjects: ['moon'] }),
  ...words('moonlit moonrise', { subjects: ['moon'], time: 'night' }),
  ...words('star constellation galaxy cosmos', { subjects: ['stars'] }),
  ...words('starry starlight', { subjects: ['stars'], time: 'night' }),
  ...words('tree oak pine palm willow birch maple fir spruce cedar', { subjects: ['tree'] }),
  ...words('forest wood woods woodland jungle grove', { subjects: ['forest'] }),
  ...words('house home cottage cabin hut barn farmhouse chalet village', { subjects: ['house'] }),
  ...words('city town skyline building skyscraper street downtown urban tower', { subjects: ['city'] }),
  ...words('boat ship sailboat sail sailing yacht ferry canoe kayak', { subjects: ['boat', 'water'] }),
  ...words('bird gull seagull crow raven eagle sparrow swallow flock', { subjects: ['bird'] }),
  ...words('cat kitten kitty', { subjects: ['cat'] }),
  ...words('dog puppy hound', { subjects: ['dog'] }),
  ...words('flower rose tulip daisy sunflower garden meadow blossom bloom poppy lavender bouquet', { subjects: ['flower'] }),
  ...words('cloud cloudy overcast fog foggy mist misty', { subjects: ['cloud'] }),
  ...words('rain rainy raining drizzle shower storm stormy thunder thunderstorm lightning', { subjects: ['rain', 'cloud'] }),
  ...words('snow snowy snowing snowfall blizzard snowflake', { subjects: ['snow'], season: 'winter' }),
  ...words('desert dune sand sandy cactus', { subjects: ['desert'] }),
  ...words('dawn morning', { time: 'dawn' }),
  ...words('day daytime noon midday afternoon daylight', { time: 'day' }),
  ...words('dusk evening twilight', { time: 'dusk' }),
  ...words('night midnight nighttime dark nocturnal', { time: 'night' }),
  ...words('spring', { season: 'spring' }),
  ...words('summer', { season: 'summer' }),
  ...words('autumn fall autumnal', { season: 'autumn' }),
  ...words('winter wintry frost frosty', { season: 'winter' }),
])

export type Reading = {
  subjects: Set<Subject>
  /** Subjects named in the plural ("trees", "birds"): drawn several times. */
  plural: Set<Subject>
  time?: TimeOfDay
  season?: Season
}

function meaningOf(word: string): { meaning: Meaning; plural: boolean } | undefined {
  const exact = VOCABULARY.get(word)
  if (exact) return { meaning: exact, plural: false }
  for (const singular of [word.replace(/ies$/, 'y'), word.replace(/es$/, ''), word.replace(/s$/, '')]) {
    const meaning = singular !== word ? VOCABULARY.get(singular) : undefined
    if (meaning) return { meaning, plural: true }
  }
  return undefined
}

/**
 * The subjects, time and season a prompt names. The last time or season named wins; subjects
 * named in the negative prompt are left out ("no birds" there means no birds).
 */
export function readPrompt(prompt: string, negativePrompt = ''): Reading {
  const reading: Reading = { subjects: new Set(), plural: new Set() }
  for (const word of prompt.toLowerCase().match(/\p{L}+/gu) ?? []) {
    const found = meaningOf(word)
    if (!found) continue
    for (const subject of found.meaning.subjects ?? []) {
      reading.subjects.add(subject)
      if (found.plural) reading.plural.add(subject)
    }
    if (found.meaning.time) reading.time = found.meaning.time
    // "falls" is a verb more often than the plural of autumn.
    if (found.meaning.season && !found.plural) reading.season = found.meaning.season
  }
  // Only what a word names itself: "no boats" keeps the sea a boat would bring.
  for (const word of negativePrompt.toLowerCase().match(/\p{L}+/gu) ?? []) {
    const named = meaningOf(word)?.meaning.subjects?.[0]
    if (named) reading.subjects.delete(named)
  }
  return reading
}
