/// Loose blobs are files of their own, named by their id: publishing and deleting one touches
/// none of the store's segment bookkeeping, only names under `objects/`.
extension BlobStore {
    /// Renames a staged blob to its name (under the lock, so it is ordered with deletions).
    func publish(_ staged: StagedLooseBlob) throws {
        if staged.isStagedOutsideItsShard {
            // Staged elsewhere, no file kept its shard directories since the stage looked: the
            // lock now keeps them, so look again (a link there would take the blob out of DIR).
            try io.requireRealShardDirectories(staged.shards)
        }
        do {
            try io.rename(staged.temporary, to: staged.final)
        } catch BlobCacheError.io(_, _, .noSuchFileOrDirectory) where staged.isStagedOutsideItsShard {
            // Deleting the last blob of its shard has removed the shard's directories since
            // the stage made them. Nothing removes them while the lock is held.
            try io.makeShardDirectories(staged.shards, durably: synchronous)
            try io.requireRealShardDirectories(staged.shards)
            try io.rename(staged.temporary, to: staged.final)
        }
        if synchronous {
            try io.syncDirectory(staged.final.removingLastComponent())
            // A rename between directories is durable only once both are: a streamed value is
            // staged before its id (so its shard) is known.
            if staged.isStagedOutsideItsShard { try io.syncDirectory(staged.temporary.removingLastComponent()) }
        }
    }

    // MARK: Deleting (only from the engine's deferred list, after the journal allows it)

    /// Deletes a loose blob file, and its shard directories when they are left empty (so that
    /// a small cache does not keep hundreds of empty directories).
    func deleteLoose(_ id: BlobID) throws {
        let shards = files.shardDirectories(of: id)
        guard try io.shardDirectoriesAreReal(shards) else { return }   // never unlink through a link
        try io.remove(files.loosePath(of: id))
        if io.removeDirectory(shards.lower) { io.removeDirectory(shards.upper) }
    }
}
