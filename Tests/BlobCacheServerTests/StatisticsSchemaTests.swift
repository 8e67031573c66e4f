import Foundation
import Testing

/// `blobcache stat --json` and `GET /status` print one schema: docs/statistics.schema.json.
@Suite(.serialized)
struct StatisticsSchemaTests {
    static let curlInstalled = Run.installed("curl")

    /// The schema file, found from this source file's place in the repository.
    static func schema() throws -> [String: Any] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let data = try Data(contentsOf: root.appendingPathComponent("docs/statistics.schema.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// What in `value` breaks `schema`, for the subset of JSON Schema the file uses: `type`
    /// (one or several), `properties`, `required`, `additionalProperties` (false or a schema), `$ref`.
    static func violations(of value: Any, _ schema: [String: Any], root: [String: Any], at path: String = "$") -> [String] {
        if let reference = schema["$ref"] as? String {
            let name = String(reference.dropFirst("#/$defs/".count))
            guard let target = (root["$defs"] as? [String: Any])?[name] as? [String: Any] else { return ["\(path): bad $ref \(reference)"] }
            return violations(of: value, target, root: root, at: path)
        }
        if let type = schema["type"] {
            let types = (type as? [String]) ?? [type as? String ?? ""]
            let matches = types.contains { kind in
                switch kind {
                case "object": value is [String: Any]
                case "integer": value is Int && !(value is Bool && "\(value)" == "true")
                case "number": value is Double || value is Int
                case "string": value is String
                case "null": value is NSNull
                case "boolean": value is Bool
                default: false
                }
            }
            if !matches { return ["\(path): \(value) is not \(types)"] }
        }
        guard let object = value as? [String: Any] else { return [] }
        var found: [String] = []
        let properties = schema["properties"] as? [String: Any] ?? [:]
        for name in schema["required"] as? [String] ?? [] where object[name] == nil { found.append("\(path).\(name): missing") }
        for (name, field) in object {
            if let property = properties[name] as? [String: Any] {
                found += violations(of: field, property, root: root, at: "\(path).\(name)")
            } else if let extra = schema["additionalProperties"] as? [String: Any] {
                found += violations(of: field, extra, root: root, at: "\(path).\(name)")
            } else if schema["additionalProperties"] as? Bool == false {
                found.append("\(path).\(name): not in the schema")
            }
        }
        return found
    }

    @Test("stat --json and GET /status both validate against docs/statistics.schema.json",
          .enabled(if: curlInstalled, "curl is not installed"))
    func oneSchema() throws {
        let schema = try Self.schema()
        let scratch = try ScratchDirectory("schema")
        let tool = ServerProcess.productsDirectory.appendingPathComponent("blobcache").path
        #expect(try Run.run(tool, ["--dir", scratch.path, "put", "k", "/dev/null"]).status == 0)
        #expect(try Run.run(tool, ["--dir", scratch.path, "--namespace", "team", "put", "k", "/dev/null"]).status == 0)
        let stat = try Run.run(tool, ["--dir", scratch.path, "stat", "--json"])
        let statJSON = try JSONSerialization.jsonObject(with: Data(stat.output.utf8))
        #expect(Self.violations(of: statJSON, schema, root: schema).isEmpty, "\(Self.violations(of: statJSON, schema, root: schema))")
        #expect((statJSON as? [String: Any])?["schemaVersion"] as? Int == 1)

        let server = try ServerProcess(directory: scratch.path)
        let status = try Curl.request("GET", "\(server.url)/status")
        let statusJSON = try JSONSerialization.jsonObject(with: Data(status.body))
        #expect(Self.violations(of: statusJSON, schema, root: schema).isEmpty, "\(Self.violations(of: statusJSON, schema, root: schema))")
        #expect((statusJSON as? [String: Any])?["directory"] == nil, "no path of this machine in a response")
        // The validator itself refuses what the schema does not allow.
        #expect(!Self.violations(of: ["schemaVersion": "one"], schema, root: schema).isEmpty)
        #expect(server.terminate() == 0)
    }
}
