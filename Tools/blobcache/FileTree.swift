#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The regular files under a directory, found with `readdir(3)`: the type each entry's
/// `d_type` gives (an `lstat` only where the file system gives none). Symbolic links are neither
/// followed nor listed, and a file system mounted inside is not entered (as `find -xdev`).
/// Foundation's enumerator built an attribute dictionary for every file, a fifth of an
/// import's time on the shared corpus.
enum FileTree {
    /// Why a walk stopped.
    struct Unreadable: Error, CustomStringConvertible {
        let description: String
    }

    /// What a walk found.
    struct Listing {
        /// The path, relative to the root, of every regular file, in no particular order.
        var files: [String] = []
        /// Entries not taken because their names are not UTF-8 (so no key can name them),
        /// relative to the root, with each byte that is not UTF-8 shown as `\xNN`.
        var notUTF8: [String] = []
        /// Symbolic links passed over (never followed).
        var links = 0
        /// Pipes, sockets and devices passed over.
        var special = 0
    }

    /// The regular files under `root`. An entry removed while the walk runs is passed over; a
    /// directory that cannot be read stops it.
    ///
    ///     let files = try FileTree.regularFiles(under: "/srv/assets").files   // ["css/site.css", …]
    static func regularFiles(under root: String) throws -> Listing {
        var listing = Listing()
        var rootInfo = stat()
        guard stat(root, &rootInfo) == 0 else { throw unreadable(root) }
        var pending = [""]   // directories still to list, relative to root
        while let relative = pending.popLast() {
            let directory = relative.isEmpty ? root : root + "/" + relative
            guard let stream = opendir(directory) else {
                if errno == ENOENT && !relative.isEmpty { continue }
                throw unreadable(directory)
            }
            defer { closedir(stream) }
            var info = stat()
            guard fstat(dirfd(stream), &info) == 0 else { throw unreadable(directory) }
            guard info.st_dev == rootInfo.st_dev else { continue }
            while true {
                errno = 0
                guard let entry = readdir(stream) else {
                    // NULL with errno 0 is the end; with an errno, the error that stopped it.
                    if errno != 0 { throw unreadable(directory) }
                    break
                }
                // The name where it lies (a record is only as long as its name: copying the
                // whole `d_name` array could read past the end of the last one).
                let name = UnsafeRawPointer(entry).advanced(by: MemoryLayout<dirent>.offset(of: \dirent.d_name)!)
                    .assumingMemoryBound(to: CChar.self)
                guard let text = String(validatingCString: name) else {
                    listing.notUTF8.append((relative.isEmpty ? "" : relative + "/") + escaped(name))
                    continue
                }
                if text == "." || text == ".." { continue }
                let path = relative.isEmpty ? text : relative + "/" + text
                switch try kind(entry.pointee.d_type, of: root + "/" + path) {
                case .file: listing.files.append(path)
                case .directory: pending.append(path)
                case .link: listing.links += 1
                case .special: listing.special += 1
                case .other: continue   // entries gone meanwhile
                }
            }
        }
        return listing
    }

    /// The regular file at `path`, opened for reading (the caller closes it). Anything else is
    /// refused before a byte is read: a pipe (opened without blocking, never read), a device, a
    /// directory, and a symbolic link unless `followingLink` (a PATH a user named may be one;
    /// a file the walk found has been replaced by one meanwhile).
    static func openRegularFile(_ path: String, followingLink: Bool) throws -> Int32 {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (followingLink ? 0 : O_NOFOLLOW))
        guard fd >= 0 else {
            if errno == ELOOP { throw Unreadable(description: "cannot read \(path): it is a symbolic link") }
            throw unreadable(path)
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let error = unreadable(path)
            close(fd)
            throw error
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw Unreadable(description: "cannot read \(path): it is not a regular file")
        }
        return fd
    }

    /// Stores the regular file at `path` under `key` in `space`, read a megabyte at a time (a
    /// file of any size in bounded memory); returns its size. Unreadable: `Unreadable`; the
    /// cache's refusal: its error.
    static func store(_ path: String, followingLink: Bool, in space: KeySpace, key: String) throws -> Int {
        let fd = try openRegularFile(path, followingLink: followingLink)
        defer { close(fd) }
        let pending = try space.startSet(forKey: key, expiry: nil, pinned: false)
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { chunk.deallocate() }
        while true {
            let got = read(fd, chunk.baseAddress, chunk.count)
            if got < 0 {
                if errno == EINTR { continue }
                let error = unreadable(path)
                pending.cancel()
                throw error
            }
            if got == 0 { break }
            try pending.append(UnsafeRawBufferPointer(rebasing: chunk[..<got]))
        }
        try pending.finish()
        return pending.count
    }

    private enum Kind { case file, directory, link, special, other }

    private static func kind(_ type: UInt8, of path: String) throws -> Kind {
        switch Int32(type) {
        case Int32(DT_REG): return .file
        case Int32(DT_DIR): return .directory
        case Int32(DT_LNK): return .link
        case Int32(DT_FIFO), Int32(DT_SOCK), Int32(DT_CHR), Int32(DT_BLK): return .special
        case Int32(DT_UNKNOWN):
            var info = stat()
            guard lstat(path, &info) == 0 else {
                if errno == ENOENT { return .other }
                throw unreadable(path)
            }
            switch info.st_mode & S_IFMT {
            case S_IFREG: return .file
            case S_IFDIR: return .directory
            case S_IFLNK: return .link
            default: return .special
            }
        default: return .other
        }
    }

    /// A C string with printable ASCII as it is and every other byte as `\xNN`.
    private static func escaped(_ name: UnsafePointer<CChar>) -> String {
        var text = ""
        var cursor = name
        while cursor.pointee != 0 {
            let byte = UInt8(bitPattern: cursor.pointee)
            if byte >= 0x20 && byte < 0x7f && byte != UInt8(ascii: "\\") {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                text += "\\x" + (byte < 16 ? "0" : "") + String(byte, radix: 16)
            }
            cursor += 1
        }
        return text
    }

    private static func unreadable(_ path: String) -> Unreadable {
        Unreadable(description: "cannot read \(path): \(String(cString: strerror(errno)))")
    }
}
