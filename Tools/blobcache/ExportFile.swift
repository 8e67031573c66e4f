import BlobCache
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes one value as a file in an open directory. A name nothing holds yet is created with
/// `O_EXCL` and written in place (the common case: a fresh destination), which spares a
/// temporary name and a rename per file; a failure removes it again, so the destination is as
/// it was. A name something holds already is written beside it and renamed over it once whole,
/// so a value found damaged part way, or a failed write, leaves what was there.
enum ExportFile {
    /// Writes what `reader` reads to `name` in `directory`; never through a symbolic link.
    ///
    ///     try ExportFile.store(reader, named: "b", in: directoryDescriptor)
    static func store(_ reader: ValueReader, named name: String, in directory: Int32) throws {
        // O_CREAT | O_EXCL never follows a link: a link (or anything) at the name gives EEXIST.
        let fd = openat(directory, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o666)
        if fd >= 0 {
            do { try writeAndClose(reader, to: fd, name: name) } catch {
                unlinkat(directory, name, 0)
                throw error
            }
            return
        }
        guard errno == EEXIST else { throw ExportError.fromErrno(name) }
        try replace(name, in: directory, with: reader)
    }

    /// Writes the value under a temporary name beside `name` and renames it into place.
    private static func replace(_ name: String, in directory: Int32, with reader: ValueReader) throws {
        // A symbolic link where the file goes is never followed, nor replaced.
        var existing = stat()
        if fstatat(directory, name, &existing, AT_SYMLINK_NOFOLLOW) == 0, existing.st_mode & S_IFMT == S_IFLNK {
            errno = ELOOP
            throw ExportError.fromErrno(name)
        }
        let temporary = ".\(name).blobcache-export-\(UInt64.random(in: 0 ... .max) & 0xffff_ffff)"
        let fd = openat(directory, temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o666)
        guard fd >= 0 else { throw ExportError.fromErrno(name) }
        do {
            try writeAndClose(reader, to: fd, name: name)
            guard renameat(directory, temporary, directory, name) == 0 else { throw ExportError.fromErrno(name) }
        } catch {
            unlinkat(directory, temporary, 0)
            throw error
        }
    }

    /// Writes every chunk to `fd` and closes it (also when a write fails). A large value's
    /// written pages are handed to write-back as it goes (`WriteBack`), so an export of large
    /// files keeps a bounded amount of dirty memory in flight instead of stalling all at once
    /// when the kernel's dirty limit is reached; small files are left to the kernel's own
    /// write-back, and nothing waits for the disk (no fsync: export promises no durability).
    private static func writeAndClose(_ reader: ValueReader, to fd: Int32, name: String) throws {
        var written = 0, handedOn = 0
        do {
            try reader.forEachChunk { chunk in
                var done = 0
                while done < chunk.count {
                    let n = write(fd, chunk.baseAddress! + done, chunk.count - done)
                    if n < 0 {
                        if errno == EINTR { continue }
                        throw ExportError.fromErrno(name)
                    }
                    done += n
                }
                written += chunk.count
                if written - handedOn >= WriteBack.stride {
                    WriteBack.start(fd, from: handedOn, count: written - handedOn)
                    handedOn = written
                }
            }
        } catch {
            close(fd)
            throw error
        }
        guard close(fd) == 0 || errno == EINTR else { throw ExportError.fromErrno(name) }
    }
}
