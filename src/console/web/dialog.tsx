/**
 * Modal dialogs of the console: the native `<dialog>` opened with `showModal()`, so the browser
 * keeps focus inside, Escape closes it and the rest of the page is inert; focus goes back to what
 * was focused before. Used for a secret shown once and for confirming an irreversible action.
 */
import type { ComponentChildren } from "preact"
import { useEffect, useRef, useState } from "preact/hooks"

export const Modal = ({ id, title, onClose, children }: {
  readonly id: string
  readonly title: string
  /** Escape, or a close button inside. */
  readonly onClose: () => void
  readonly children: ComponentChildren
}) => {
  const dialog = useRef<HTMLDialogElement>(null)
  // The opener, taken on the first render (the click's own turn), before anything moves the focus.
  const [opener] = useState(() => (document.activeElement instanceof HTMLElement && document.activeElement !== document.body ? document.activeElement : null))
  useEffect(() => {
    const element = dialog.current
    if (element === null) return
    if (!element.open) element.showModal()
    return () => {
      if (element.open) element.close()
      // The opener may be gone or disabled; then the page's heading is the next best place.
      opener?.focus()
      if (opener === null || document.activeElement !== opener) document.querySelector<HTMLElement>("main h1")?.focus()
    }
  }, [])
  return (
    <dialog ref={dialog} id={id} class="modal" aria-labelledby={`${id}-title`}
      onCancel={(event) => {
        // Escape: the owner decides (it unmounts the dialog), so the state and the page agree.
        event.preventDefault()
        onClose()
      }}>
      <h2 id={`${id}-title`}>{title}</h2>
      {children}
    </dialog>
  )
}

/** A secret the API answers once: shown with a copy button and the warning that it will not be shown again. */
export const SecretDialog = ({ title, what, secret, onClose }: {
  readonly title: string
  /** "API key", "signing secret": the label is this with a capital. */
  readonly what: string
  readonly secret: string
  readonly onClose: () => void
}) => {
  const field = useRef<HTMLInputElement>(null)
  const [copied, setCopied] = useState<"no" | "yes" | "failed">("no")
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret)
      setCopied("yes")
    } catch {
      // No clipboard permission (an insecure origin, a locked-down browser): select it for Ctrl+C.
      field.current?.select()
      setCopied("failed")
    }
  }
  return (
    <Modal id="secret-dialog" title={title} onClose={onClose}>
      <p class="warning" id="secret-warning">
        Copy the {what} now: it is shown only this once and cannot be shown again.
      </p>
      <label for="secret-value">{what.charAt(0).toUpperCase() + what.slice(1)}</label>
      <div class="secret-row">
        <input id="secret-value" ref={field} type="text" readOnly value={secret} aria-describedby="secret-warning"
          spellcheck={false} autocomplete="off" onFocus={(event) => event.currentTarget.select()} />
        <button type="button" id="copy-secret" onClick={copy}>Copy</button>
      </div>
      <p role="status" class="muted small" id="copy-status">
        {copied === "yes" ? "Copied to the clipboard." : copied === "failed" ? "The browser refused the clipboard: the text is selected, press Ctrl+C." : ""}
      </p>
      <div class="dialog-actions">
        <button type="button" class="primary" id="secret-done" onClick={onClose}>I have saved it</button>
      </div>
    </Modal>
  )
}

/** An irreversible action asked about once more; the action's failure is shown inside, the dialog stays. */
export const ConfirmDialog = ({ title, confirmLabel, busy, onConfirm, onCancel, children }: {
  readonly title: string
  readonly confirmLabel: string
  readonly busy: boolean
  readonly onConfirm: () => void
  readonly onCancel: () => void
  readonly children: ComponentChildren
}) => (
  <Modal id="confirm-dialog" title={title} onClose={onCancel}>
    {children}
    <div class="dialog-actions">
      <button type="button" id="confirm-cancel" onClick={onCancel} disabled={busy}>Cancel</button>
      <button type="button" class="danger" id="confirm-action" onClick={onConfirm} disabled={busy}>{busy ? "Working…" : confirmLabel}</button>
    </div>
  </Modal>
)
