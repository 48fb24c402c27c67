/**
 * The sandbox world a provider push came from (decision 0109). In sandbox mode every profile has
 * its own simulated accounts under the same seeded ids, so a push for `act_1001` reaches only the
 * connections of the profile whose world sent it: `/hooks/{provider}` sets this around its work
 * and `ConnectionsRepo.liveForAccount` (which every push handler finds its connections through)
 * keeps that profile's rows. Empty outside a sandbox push (live providers' account ids are theirs).
 */
import { Context } from "effect"

export const PushWorld = Context.Reference<{ readonly profileId: string | undefined }>("svc/PushWorld", {
  defaultValue: () => ({ profileId: undefined })
})
