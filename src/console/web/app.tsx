/**
 * The console's screens and where each address leads (issue 33):
 * `/` sign-in (or on to the console when already signed in), `/console` the profile last used,
 * `/console/<profile>/overview` the Overview, `/console/<profile>/campaigns` the Campaigns, then `journeys`, `connections`,
 * `reports` and `developers` (keys and webhooks). A profile the person does not reach is a page
 * saying so; a failed call shows its message and request id.
 */
import type { ComponentChildren } from "preact"
import { useEffect, useState } from "preact/hooks"
import { ApiError, type MyProfile, myProfiles, type Person, me, rememberCsrfToken, safeNext, signIn, SignedOut, signOut, whoIsSignedIn } from "./client.ts"
import { navigate, onLinkClick, useLocation } from "./router.ts"
import { CampaignsScreen } from "./campaigns.tsx"
import { ConnectionsScreen } from "./connections.tsx"
import { DevelopersScreen } from "./developers.tsx"
import { readsConnections, readsJourneys, seesDevelopers, usesReports } from "./access.ts"
import { JourneysScreen } from "./journeys.tsx"
import { OverviewScreen } from "./overview.tsx"
import { ReportsScreen } from "./reports.tsx"
import { ErrorPanel, useFocusHeading } from "./ui.tsx"

const LAST_PROFILE = "svc.console.lastProfile."

const lastProfileOf = (userId: string): string | null => window.localStorage.getItem(LAST_PROFILE + userId)
const rememberProfile = (userId: string, profileId: string): void => window.localStorage.setItem(LAST_PROFILE + userId, profileId)

// --- Sign-in -----------------------------------------------------------------------------------

const SignInScreen = ({ next, email: givenEmail }: { readonly next: string; readonly email: string }) => {
  const [email, setEmail] = useState(givenEmail)
  const [password, setPassword] = useState("")
  const [busy, setBusy] = useState(false)
  const [checking, setChecking] = useState(true)
  const [error, setError] = useState<unknown>(null)
  const heading = useFocusHeading(checking)
  const wasSent = next !== "/console"

  useEffect(() => {
    // Already signed in (another tab, a reload): straight on.
    whoIsSignedIn().then(
      (person) => (person === null ? setChecking(false) : navigate(next, { replace: true })),
      () => setChecking(false)
    )
  }, [next])

  const submit = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    setError(null)
    try {
      const session = await signIn(email, password)
      rememberCsrfToken(session.data.csrf_token)
      navigate(next, { replace: true })
    } catch (failure) {
      setError(failure)
      setBusy(false)
    }
  }

  if (checking) return <main class="signin" id="main"><p class="loading">Checking your session…</p></main>
  return (
    <main class="signin" id="main">
      <h1 ref={heading} tabIndex={-1}>Sign in</h1>
      <p class="muted">Attribution console: outcomes, spend and credit across your channels.</p>
      {wasSent && <p class="notice" role="status">Sign in to continue to the page you asked for.</p>}
      {error !== null && (
        <ErrorPanel
          error={error}
          title={error instanceof ApiError && error.status === 401 ? "Email or password not recognised" : "Sign-in failed"}
        />
      )}
      <form onSubmit={submit} method="post" action="/" aria-label="Sign in">
        <label for="email">Email</label>
        <input id="email" name="email" type="email" autocomplete="username" required value={email}
          onInput={(event) => setEmail(event.currentTarget.value)} />
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="current-password" required value={password}
          onInput={(event) => setPassword(event.currentTarget.value)} />
        <button type="submit" class="primary" disabled={busy}>{busy ? "Signing in…" : "Sign in"}</button>
      </form>
      <p class="muted small">No password yet? Ask your workspace owner for a one-time link.</p>
    </main>
  )
}

// --- The signed-in frame -----------------------------------------------------------------------

interface Signed {
  readonly person: Person
  readonly profiles: ReadonlyArray<MyProfile>
}

/**
 * The screens of a profile, in the order the nav shows them; `offered` hides an entry the person's
 * roles and scopes on the profile do not allow (decision 0126; the API refuses it anyway).
 */
const SCREENS: ReadonlyArray<{ readonly path: string; readonly label: string; readonly offered?: (profile: MyProfile) => boolean }> = [
  { path: "overview", label: "Overview" },
  { path: "campaigns", label: "Campaigns" },
  { path: "journeys", label: "Journeys", offered: readsJourneys },
  { path: "connections", label: "Connections", offered: readsConnections },
  { path: "reports", label: "Reports", offered: usesReports },
  { path: "developers", label: "Developers", offered: seesDevelopers }
]

const offeredScreens = (profile: MyProfile) => SCREENS.filter((known) => known.offered?.(profile) ?? true)

const Frame = ({ signed, profile, screen, children }: {
  readonly signed: Signed
  readonly profile: MyProfile | null
  /** The screen shown, kept when the profile is switched. */
  readonly screen: string
  readonly children: ComponentChildren
}) => {
  const switchTo = SCREENS.some((known) => known.path === screen) ? screen : "overview"
  const [leaving, setLeaving] = useState(false)
  const [error, setError] = useState<unknown>(null)
  const leave = async () => {
    setLeaving(true)
    try {
      await signOut()
    } catch (failure) {
      if (failure instanceof SignedOut) return
      setError(failure)
      setLeaving(false)
      return
    }
    rememberCsrfToken(null)
    window.location.assign("/")
  }
  return (
    <>
      <a class="skip" href="#main">Skip to content</a>
      <header class="bar">
        <span class="brand">Attribution</span>
        {signed.profiles.length > 0 && (
          <label class="switcher">
            <span>Profile</span>
            <select
              id="profile-switcher"
              value={profile?.profile_id ?? ""}
              onChange={(event) => navigate(`/console/${event.currentTarget.value}/${switchTo}${window.location.search}`)}
            >
              {profile === null && <option value="">Choose a profile</option>}
              {signed.profiles.map((option) => (
                <option key={option.profile_id} value={option.profile_id}>
                  {option.workspace_name} · {option.name || "Unnamed profile"}
                </option>
              ))}
            </select>
          </label>
        )}
        {profile !== null && (
          <nav aria-label="Screens">
            {offeredScreens(profile).map((known) => {
              // The range and model go along: the screens read the same figures over the same days.
              const to = `/console/${profile.profile_id}/${known.path}${window.location.search}`
              return (
                <a key={known.path} href={to} aria-current={known.path === screen ? "page" : undefined}
                  onClick={(event) => onLinkClick(event, to)}>{known.label}</a>
              )
            })}
          </nav>
        )}
        <span class="who" title={signed.person.email}>{signed.person.email}</span>
        <button type="button" id="sign-out" onClick={leave} disabled={leaving}>{leaving ? "Signing out…" : "Sign out"}</button>
      </header>
      {error !== null && <ErrorPanel error={error} title="Sign-out failed" />}
      <main id="main">{children}</main>
    </>
  )
}

const NoAccess = ({ signed, profileId }: { readonly signed: Signed; readonly profileId: string }) => {
  const heading = useFocusHeading(profileId)
  return (
    <section class="no-access">
      <h1 ref={heading} tabIndex={-1}>You cannot open this profile</h1>
      <p>The profile <code>{profileId}</code> does not exist, or your membership does not reach it. Ask its workspace owner for access.</p>
      {signed.profiles.length > 0
        ? (
          <>
            <p>Profiles you can open:</p>
            <ul>
              {signed.profiles.map((profile) => (
                <li key={profile.profile_id}>
                  <a href={`/console/${profile.profile_id}/overview`}
                    onClick={(event) => onLinkClick(event, `/console/${profile.profile_id}/overview`)}>
                    {profile.workspace_name} · {profile.name || "Unnamed profile"}
                  </a>
                </li>
              ))}
            </ul>
          </>
        )
        : <p>You are not a member of any profile yet.</p>}
    </section>
  )
}

const NoProfiles = () => {
  const heading = useFocusHeading("none")
  return (
    <section>
      <h1 ref={heading} tabIndex={-1}>No profile yet</h1>
      <p>Your account is not a member of any profile. Ask a workspace owner to add you.</p>
    </section>
  )
}

const NotFoundPage = () => {
  const heading = useFocusHeading("missing")
  return (
    <section>
      <h1 ref={heading} tabIndex={-1}>No such page</h1>
      <p><a href="/console" onClick={(event) => onLinkClick(event, "/console")}>Go to the console</a></p>
    </section>
  )
}

const Console = ({ path, query }: { readonly path: string; readonly query: URLSearchParams }) => {
  const [signed, setSigned] = useState<Signed | null>(null)
  const [error, setError] = useState<unknown>(null)
  useEffect(() => {
    Promise.all([me(), myProfiles()]).then(
      ([who, profiles]) => setSigned({ person: who.data.user, profiles: profiles.data }),
      (failure: unknown) => {
        if (!(failure instanceof SignedOut)) setError(failure)
      }
    )
  }, [])

  const segments = path.split("/").filter((segment) => segment !== "")
  const profileId = segments[1] ?? null
  const screen = segments[2] ?? "overview"

  useEffect(() => {
    if (signed === null || profileId !== null) return
    // `/console`: the profile this person last used here, else their first.
    const last = lastProfileOf(signed.person.id)
    const chosen = signed.profiles.find((profile) => profile.profile_id === last) ?? signed.profiles[0]
    if (chosen !== undefined) navigate(`/console/${chosen.profile_id}/overview${query.size === 0 ? "" : `?${query.toString()}`}`, { replace: true })
  }, [signed, profileId])

  const profile = signed?.profiles.find((candidate) => candidate.profile_id === profileId) ?? null
  useEffect(() => {
    if (signed !== null && profile !== null) rememberProfile(signed.person.id, profile.profile_id)
  }, [signed, profile])

  if (error !== null) {
    return <main id="main" class="narrow"><ErrorPanel error={error} title="The console could not load" /></main>
  }
  if (signed === null) return <main id="main"><p class="loading">Loading…</p></main>
  if (profileId === null) return <Frame signed={signed} profile={null} screen={screen}>{signed.profiles.length === 0 ? <NoProfiles /> : <p class="loading">Opening your profile…</p>}</Frame>
  if (profile === null) return <Frame signed={signed} profile={null} screen={screen}><NoAccess signed={signed} profileId={profileId} /></Frame>
  return (
    <Frame signed={signed} profile={profile} screen={screen}>
      {segments.length > 3
        ? <NotFoundPage />
        : screen === "overview"
        ? <OverviewScreen profile={profile} query={query} />
        : screen === "campaigns"
        ? <CampaignsScreen profile={profile} query={query} />
        : screen === "journeys"
        ? <JourneysScreen profile={profile} />
        : screen === "connections"
        ? <ConnectionsScreen profile={profile} query={query} />
        : screen === "reports"
        ? <ReportsScreen profile={profile} />
        : screen === "developers"
        ? <DevelopersScreen profile={profile} />
        : <NotFoundPage />}
    </Frame>
  )
}

export const App = () => {
  const { path, query } = useLocation()
  if (path === "/" || path === "") {
    return <SignInScreen next={safeNext(query.get("next"))} email={query.get("email") ?? ""} />
  }
  if (path === "/console" || path.startsWith("/console/")) return <Console path={path} query={query} />
  return <main id="main"><NotFoundPage /></main>
}
