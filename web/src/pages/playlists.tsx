// Playlists: the list with a form for a new one (/playlists), and the editor (/playlists/:id):
// name, order (drag, or the keyboard: Space to lift, arrows to move, Space to drop), time per
// item, thumbnails, photos uploaded straight into it and prompts that make a fresh picture.
import { closestCenter, DndContext, type DragEndEvent, KeyboardSensor, PointerSensor, useSensor, useSensors } from '@dnd-kit/core'
import { arrayMove, SortableContext, sortableKeyboardCoordinates, useSortable, verticalListSortingStrategy } from '@dnd-kit/sortable'
import { CSS } from '@dnd-kit/utilities'
import { useMutation, useQuery } from '@tanstack/react-query'
import { useState } from 'react'
import { useForm } from 'react-hook-form'
import { Link, useNavigate, useParams } from 'react-router'
import { errorText, imageUrl, type Playlist } from '../api'
import { playlistMutations, playlistQueries } from '../queries/playlists'
import { uploadQueries } from '../queries/uploads'
import { Button, Empty, ErrorState, Field, Loading, Notice, PhotoField } from '../ui'

type Item = Playlist['items'][number]

const minutes = (s: number) => (s % 60 === 0 ? `${s / 60} min` : `${s} s`)

export function PlaylistsPage() {
  const lists = useQuery(playlistQueries.list())
  return (
    <>
      <h1>Playlists</h1>
      <section className="card" aria-labelledby="lists-title">
        <h2 id="lists-title">Your playlists</h2>
        {lists.isPending ? <Loading what="playlists" /> : null}
        {lists.isError ? <ErrorState error={lists.error} retry={() => void lists.refetch()} /> : null}
        {lists.data?.length === 0 ? <Empty>No playlists yet. Make one below, then give a frame a day plan on its page.</Empty> : null}
        <ul className="events">
          {lists.data?.map((p) => (
            <li key={p.id}>
              <Link to={`/playlists/${p.id}`}>{p.name}</Link>
              <span className="muted">
                {p.items.length} item{p.items.length === 1 ? '' : 's'} · {p.mode} · {minutes(p.itemSeconds)} each
              </span>
            </li>
          ))}
        </ul>
      </section>
      <NewPlaylist />
    </>
  )
}

function NewPlaylist() {
  const navigate = useNavigate()
  const form = useForm<{ name: string; mode: 'sequential' | 'shuffle'; minutes: number }>({
    defaultValues: { mode: 'sequential', minutes: 60 },
  })
  const create = useMutation(playlistMutations.create())
  return (
    <section className="card" aria-labelledby="new-list-title">
      <h2 id="new-list-title">New playlist</h2>
      <form
        onSubmit={form.handleSubmit((v) =>
          create.mutate(
            { name: v.name, mode: v.mode, itemSeconds: Math.round(v.minutes * 60) },
            { onSuccess: (p) => navigate(`/playlists/${p.id}`) },
          ),
        )}
      >
        {create.isError ? <Notice kind="error">{errorText(create.error)}</Notice> : null}
        <Field label="Playlist name" error={form.formState.errors.name}>
          <input {...form.register('name', { required: 'Give it a name', maxLength: { value: 100, message: 'At most 100 characters' } })} />
        </Field>
        <Field label="Order">
          <select {...form.register('mode')}>
            <option value="sequential">In order</option>
            <option value="shuffle">Shuffled</option>
          </select>
        </Field>
        <Field label="Minutes per item" error={form.formState.errors.minutes}>
          <input
            type="number"
            min={1}
            step={1}
            {...form.register('minutes', {
              valueAsNumber: true,
              required: 'How long each shows',
              min: { value: 1, message: 'At least 1' },
            })}
          />
        </Field>
        <Button type="submit" busy={create.isPending}>
          Create
        </Button>
      </form>
    </section>
  )
}

export function PlaylistPage() {
  const { id = '' } = useParams()
  const list = useQuery(playlistQueries.detail(id))
  const reorder = useMutation(playlistMutations.reorder(id))
  const remove = useMutation(playlistMutations.removeItem(id))
  const sensors = useSensors(useSensor(PointerSensor), useSensor(KeyboardSensor, { coordinateGetter: sortableKeyboardCoordinates }))
  if (list.isPending) return <Loading what="the playlist" />
  if (list.isError) return <ErrorState error={list.error} retry={() => void list.refetch()} />
  const p = list.data
  const onDragEnd = ({ active, over }: DragEndEvent) => {
    if (!over || active.id === over.id) return
    const ids = p.items.map((i) => i.id)
    reorder.mutate(arrayMove(ids, ids.indexOf(String(active.id)), ids.indexOf(String(over.id))))
  }
  return (
    <>
      <p>
        <Link to="/playlists">← All playlists</Link>
      </p>
      <h1>{p.name}</h1>
      <p className="muted">
        {p.mode === 'shuffle' ? 'Shuffled' : 'In order'}, {minutes(p.itemSeconds)} each. Drag to reorder, or focus an item's handle and use
        Space and the arrow keys.
      </p>
      <section className="card" aria-labelledby="items-title">
        <h2 id="items-title">Items</h2>
        {reorder.isError ? <Notice kind="error">{errorText(reorder.error)}</Notice> : null}
        {remove.isError ? <Notice kind="error">{errorText(remove.error)}</Notice> : null}
        {p.items.length === 0 ? <Empty>No items yet: add photos or prompts below.</Empty> : null}
        <DndContext sensors={sensors} collisionDetection={closestCenter} onDragEnd={onDragEnd}>
          <SortableContext items={p.items.map((i) => i.id)} strategy={verticalListSortingStrategy}>
            <ol className="playlist">
              {p.items.map((item, n) => (
                <SortableItem key={item.id} item={item} n={n} onRemove={() => remove.mutate(item.id)} />
              ))}
            </ol>
          </SortableContext>
        </DndContext>
      </section>
      <AddItems playlist={p} />
    </>
  )
}

function SortableItem({ item, n, onRemove }: { item: Item; n: number; onRemove: () => void }) {
  const { attributes, listeners, setNodeRef, transform, transition, isDragging } = useSortable({ id: item.id })
  const what = { prompt: 'a new picture from a prompt', screen: 'a screen', upload: 'photo', image: 'picture' }[item.kind]
  const label = `Item ${n + 1}: ${what}`
  return (
    <li
      ref={setNodeRef}
      style={{ transform: CSS.Transform.toString(transform), transition }}
      className={isDragging ? 'dragging' : undefined}
      data-item-id={item.id}
    >
      <button type="button" className="handle" aria-label={`Move ${label}`} {...attributes} {...listeners}>
        ⠿
      </button>
      <Thumb item={item} />
      <span>{label}</span>
      <Button kind="secondary" onClick={onRemove}>
        Remove
      </Button>
    </li>
  )
}

function Thumb({ item }: { item: Item }) {
  // An upload is shown through a fresh signed link to it; a stored picture through its own URL.
  const upload = useQuery({ ...uploadQueries.url(item.key ?? ''), enabled: item.kind === 'upload' && Boolean(item.key) })
  if (item.kind === 'image' && item.imageId) return <img className="thumb" src={imageUrl(item.imageId)} alt="" />
  if (item.kind === 'upload' && upload.data) return <img className="thumb" src={upload.data} alt="" />
  return <span className="thumb placeholder" aria-hidden="true" />
}

function AddItems({ playlist }: { playlist: Playlist }) {
  const [file, setFile] = useState<File | null>(null)
  const photo = useMutation(playlistMutations.addPhoto(playlist.id))
  const form = useForm<{ text: string }>()
  const prompt = useMutation(playlistMutations.addPrompt(playlist.id))
  const error = photo.error ?? prompt.error
  return (
    <section className="card" aria-labelledby="add-title">
      <h2 id="add-title">Add</h2>
      {error ? <Notice kind="error">{errorText(error)}</Notice> : null}
      <form
        onSubmit={(e) => {
          e.preventDefault()
          if (file) photo.mutate(file)
        }}
      >
        <PhotoField onPick={setFile} />
        <Button type="submit" busy={photo.isPending} disabled={!file}>
          Add photo
        </Button>
      </form>
      <form onSubmit={form.handleSubmit((v) => prompt.mutate(v.text, { onSuccess: () => form.reset() }))}>
        <Field
          label="Prompt"
          hint="A new picture is made from it each time it comes up, charged like any generation"
          error={form.formState.errors.text}
        >
          <input {...form.register('text', { required: 'Describe the picture' })} />
        </Field>
        <Button type="submit" busy={prompt.isPending}>
          Add prompt
        </Button>
      </form>
    </section>
  )
}
