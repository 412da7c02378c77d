// kube/line_framer_test.cc — recorded watch streams split at every byte offset.
#include "kube/line_framer.h"

#include <catch2/catch.hpp>

#include "base/testing/files.h"
#include "kube/error.h"

namespace kmt::kube {
namespace {

using base::testing::ReadTestFile;

std::vector<WatchEvent> Decode(const std::vector<std::string>& lines) {
  std::vector<WatchEvent> out;
  out.reserve(lines.size());
  for (const std::string& l : lines) out.push_back(ParseWatchEvent(l, "watch pods"));
  return out;
}

std::vector<std::string> Frame(std::string_view a, std::string_view b) {
  LineFramer f;
  std::vector<std::string> lines;
  f.Feed(a, lines);
  f.Feed(b, lines);
  CHECK_FALSE(f.HasPartial());
  return lines;
}

TEST_CASE("A recorded stream decodes the same at every split offset") {
  const std::string path =
      GENERATE("kube/testdata/watch_pods.jsonl", "kube/testdata/watch_pods_crlf.jsonl");
  CAPTURE(path);
  const std::string stream = ReadTestFile(path);
  const std::vector<WatchEvent> whole = Decode(Frame(stream, ""));
  REQUIRE(whole.size() == (path.find("crlf") == std::string::npos ? 6u : 3u));
  CHECK(whole[0].type == "ADDED");
  CHECK(whole[0].object["metadata"]["annotations"]["note"] ==
        "multi\nline \u00e9 \u2603 \"quoted\" {braces}");
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    std::vector<WatchEvent> split = Decode(
        Frame(std::string_view(stream).substr(0, cut), std::string_view(stream).substr(cut)));
    REQUIRE(split.size() == whole.size());
    for (size_t i = 0; i < whole.size(); ++i) {
      CAPTURE(cut, i);
      REQUIRE(split[i].type == whole[i].type);
      REQUIRE(split[i].object == whole[i].object);
    }
  }
  // One byte at a time.
  LineFramer f;
  std::vector<std::string> lines;
  for (char c : stream) f.Feed(std::string_view(&c, 1), lines);
  CHECK(Decode(lines).size() == whole.size());
}

TEST_CASE("The recorded stream carries every event type in order") {
  const std::vector<WatchEvent> events =
      Decode(Frame(ReadTestFile("kube/testdata/watch_pods.jsonl"), ""));
  std::vector<std::string> types;
  types.reserve(events.size());
  for (const WatchEvent& e : events) types.push_back(e.type);
  CHECK(types ==
        std::vector<std::string>{"ADDED", "ADDED", "MODIFIED", "BOOKMARK", "DELETED", "ERROR"});
  CHECK(events[3].object["metadata"]["resourceVersion"] == "150");
  CHECK(events[5].object["code"] == 410);
}

TEST_CASE("A stream cut mid-event leaves a partial line") {
  const std::string stream = ReadTestFile("kube/testdata/watch_pods.jsonl");
  const size_t second = stream.find('\n') + 1;
  for (size_t cut = second + 1; cut < stream.find('\n', second); cut += 97) {
    CAPTURE(cut);
    LineFramer f;
    std::vector<std::string> lines;
    f.Feed(std::string_view(stream).substr(0, cut), lines);
    CHECK(lines.size() == 1);
    CHECK(f.HasPartial());
    CHECK(f.PartialSize() == cut - second);
  }
}

TEST_CASE("Blank keep-alive lines are skipped, whitespace-only tails are not partial") {
  LineFramer f;
  std::vector<std::string> lines;
  f.Feed("\n\r\n  \n{\"type\":\"BOOKMARK\",\"object\":{}}\n  ", lines);
  CHECK(lines == std::vector<std::string>{"{\"type\":\"BOOKMARK\",\"object\":{}}"});
  CHECK_FALSE(f.HasPartial());
}

TEST_CASE("An over-long line is refused, not buffered") {
  LineFramer f(16);
  std::vector<std::string> lines;
  f.Feed("0123456789\n", lines);
  CHECK(lines.size() == 1);
  f.Feed("0123456789", lines);
  try {
    f.Feed("0123456789", lines);
    FAIL("accepted");
  } catch (const KubeError& e) {
    CHECK(e.kind() == ErrorKind::kTooLarge);
    CHECK(std::string(e.what()) == "watch event larger than 16 bytes");
  }
}

TEST_CASE("Malformed lines are clear errors") {
  struct Row {
    const char* line;
    const char* message;
  };
  const Row row = GENERATE(values<Row>({
      {"{\"type\":\"ADDED\",\"object\":{\"a\":",
       "watch pods: malformed watch event (not JSON): {\"type\":\"ADDED\",\"object\":{\"a\":"},
      {"[1,2]", "watch pods: malformed watch event (no \"type\"): [1,2]"},
      {"{\"type\":7,\"object\":{}}",
       "watch pods: malformed watch event (no \"type\"): {\"type\":7,\"object\":{}}"},
      {"{\"type\":\"ADDED\"}",
       "watch pods: malformed watch event (no \"object\"): {\"type\":\"ADDED\"}"},
      {"{\"type\":\"ADDED\",\"object\":\"x\"}",
       "watch pods: malformed watch event (no \"object\"): {\"type\":\"ADDED\",\"object\":\"x\"}"},
  }));
  CAPTURE(row.line);
  try {
    ParseWatchEvent(row.line, "watch pods");
    FAIL("parsed");
  } catch (const KubeError& e) {
    CHECK(e.kind() == ErrorKind::kInternal);
    CHECK(std::string(e.what()) == row.message);
  }
  // An unknown type decodes; the watcher decides what to do with it.
  CHECK(ParseWatchEvent("{\"type\":\"SURPRISE\",\"object\":{}}", "w").type == "SURPRISE");
}

TEST_CASE("A framed line's object is trimmed while it is parsed, as ParseTrimmed trims") {
  // Split at every byte, as chunks arrive; each line goes through the one filtered parser.
  const std::string stream =
      R"({"type":"ADDED","object":{"metadata":{"name":"p","labels":{"a":"1","b":"2","c":"3"},)"
      R"("managedFields":[{"manager":"m","fieldsV1":{"f:spec":{}}}]},"spec":{"labels":{"x":1}}}})"
      "\n";
  const ObjectTrim trim{.managed_fields = true, .max_label_bytes = 2 * (1 + kMaxLabelValueBytes)};
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    CAPTURE(cut);
    const std::vector<std::string> lines =
        Frame(std::string_view(stream).substr(0, cut), std::string_view(stream).substr(cut));
    REQUIRE(lines.size() == 1);
    const WatchEvent e = ParseWatchEvent(lines[0], "watch pods", trim);
    CHECK(e.type == "ADDED");
    CHECK(e.object == Json::parse(R"({"metadata":{"name":"p","labels":{"a":"1","b":"2"},)"
                                  R"("kmt:labelsDropped":1},"spec":{"labels":{"x":1}}})"));
    CHECK(e.object == ParseTrimmed(lines[0], ObjectsAt::kWatchEvent, trim)["object"]);
  }
}

}  // namespace
}  // namespace kmt::kube
