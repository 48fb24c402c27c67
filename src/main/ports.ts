/**
 * The ports a lower context declares and a higher one implements (dependency inversion: imports
 * go down the layers, calls may go up through these). Each is assembled here from the owning
 * context's service, so neither side imports the other.
 */
import { Layer } from "effect"
import { CommerceAppConnections } from "../accounts/admin/kill-switch.ts"
import { Connections } from "../connections/service.ts"

/** The kill switch's connections: the connections context stops and revokes them. */
const CommerceAppConnectionsLive = Layer.effect(CommerceAppConnections)(
  Connections.useSync((connections) => ({
    stopChannels: connections.stopCommerceAppChannels,
    revokeAll: connections.revokeCommerceAppConnections
  }))
).pipe(Layer.provide(Connections.layer))

/** Every port, for the routes and whatever else reaches a service that needs one. */
export const PortsLive = Layer.mergeAll(CommerceAppConnectionsLive)
