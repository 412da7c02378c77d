#include "cli/migrate.h"

#include <catch2/catch.hpp>
#include <mutex>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "api/added_term.h"
#include "base/fake_clock.h"
#include "base/poll.h"
#include "kube/fake_client.h"
#include "kube/resources.h"

namespace kmt::cli {
namespace {

using nlohmann::json;

api::NodeSelectorTerm NodeTerm(const std::string& node) {
  api::NodeSelectorTerm t;
  t.match_fields.push_back({"metadata.name", "In", {node}});
  return t;
}

void AddVmi(kube::FakeClient& fake, const std::string& ns, const std::string& name) {
  fake.Create(kube::kVirtualMachineInstances, ns,
              json{{"apiVersion", "kubevirt.io/v1"},
                   {"kind", "VirtualMachineInstance"},
                   {"metadata", {{"name", name}, {"namespace", ns}}},
                   {"spec", json::object()}});
}

// Until the plugin has created its VMIM and watches it (a real thread: real time).
void AwaitWatch(kube::FakeClient& fake) {
  base::PollUntil(base::SystemClock(), std::chrono::hours(1), std::chrono::milliseconds(1), [&] {
    return fake.Count(kube::kVirtualMachineInstanceMigrations) > 0 && fake.OpenWatchCount() > 0;
  });
}

Invocation Migrate(const std::string& vmi) {
  Invocation inv;
  inv.command = Command::kMigrate;
  inv.name = vmi;
  inv.node = "worker-3";
  return inv;
}

TEST_CASE("BuildMigration carries the term as the annotation") {
  json vmim = BuildMigration("prod", "db-1", NodeTerm("worker-3"));
  CHECK(vmim["metadata"]["generateName"] == "db-1-migration-");
  CHECK(vmim["spec"]["vmiName"] == "db-1");
  auto text = api::AddedTermSource(vmim);
  REQUIRE(text);
  auto parsed = api::ParseAddedTerm(*text);
  REQUIRE(parsed.term);
  CHECK(*parsed.term == NodeTerm("worker-3"));
  // Long VMI names still leave a valid generateName.
  json long_one = BuildMigration("prod", std::string(80, 'v'), NodeTerm("n"));
  CHECK(long_one["metadata"]["generateName"].get<std::string>().size() <= 58);
}

TEST_CASE("migrate creates the VMIM as the caller and prints kubectl's line") {
  kube::FakeClient fake;
  AddVmi(fake, "prod", "db-1");
  std::ostringstream out, err;
  int rc = RunMigrate(Migrate("db-1"), "prod", NodeTerm("worker-3"), fake, {out, err});
  CHECK(rc == 0);
  CHECK(err.str().empty());
  json list = fake.List(kube::kVirtualMachineInstanceMigrations, "prod");
  REQUIRE(list["items"].size() == 1);
  const json& vmim = list["items"][0];
  CHECK(vmim["spec"]["vmiName"] == "db-1");
  CHECK(out.str() == "virtualmachineinstancemigration.kubevirt.io/" +
                         vmim["metadata"]["name"].get<std::string>() + " created\n");
}

TEST_CASE("dry runs create nothing") {
  kube::FakeClient fake;
  AddVmi(fake, "prod", "db-1");
  std::ostringstream out, err;
  Invocation client = Migrate("db-1");
  client.dry_run = DryRun::kClient;
  client.output = "json";
  CHECK(RunMigrate(client, "prod", NodeTerm("worker-3"), fake, {out, err}) == 0);
  CHECK(json::parse(out.str())["metadata"]["generateName"] == "db-1-migration-");

  Invocation server = Migrate("db-1");
  server.dry_run = DryRun::kServer;
  std::ostringstream out2;
  CHECK(RunMigrate(server, "prod", NodeTerm("worker-3"), fake, {out2, err}) == 0);
  CHECK(out2.str().find(" created (server dry run)\n") != std::string::npos);
  CHECK(fake.Count(kube::kVirtualMachineInstanceMigrations) == 0);
}

TEST_CASE("a denial is printed as the API server returned it") {
  kube::FakeClient fake;
  AddVmi(fake, "prod", "db-1");
  json status = {{"kind", "Status"},
                 {"apiVersion", "v1"},
                 {"status", "Failure"},
                 {"reason", "Forbidden"},
                 {"code", 403},
                 {"message",
                  "admission webhook \"vmim.migration-target.kubevirt.io\" denied the request: "
                  "user \"vm-owner\" may not set it"}};
  fake.FailNextWith(kube::Verb::kCreate, 1,
                    kube::ErrorFromResponse(403, status.dump(), std::nullopt, "create"));
  std::ostringstream out, err;
  CHECK(RunMigrate(Migrate("db-1"), "prod", NodeTerm("w"), fake, {out, err}) == 1);
  CHECK(err.str() ==
        "Error from server (Forbidden): admission webhook \"vmim.migration-target.kubevirt.io\" "
        "denied the request: user \"vm-owner\" may not set it\n");
  CHECK(out.str().empty());
}

TEST_CASE("a missing VMI is reported before anything is created") {
  kube::FakeClient fake;
  std::ostringstream out, err;
  CHECK(RunMigrate(Migrate("nope"), "prod", NodeTerm("w"), fake, {out, err}) == 1);
  CHECK(err.str().rfind("Error from server (NotFound): ", 0) == 0);
  CHECK(fake.Count(kube::kVirtualMachineInstanceMigrations) == 0);
}

// Drives a VMIM through phases from another thread, as virt-controller would.
void Advance(kube::FakeClient& fake, const std::string& ns, const std::string& name,
             const std::vector<json>& statuses) {
  for (const auto& st : statuses) {
    json vmim = fake.Get(kube::kVirtualMachineInstanceMigrations, ns, name);
    vmim["status"] = st;
    fake.Update(kube::kVirtualMachineInstanceMigrations, ns, vmim, "status");
  }
}

TEST_CASE("--wait follows phases and conditions to success") {
  kube::FakeClient fake;
  AddVmi(fake, "prod", "db-1");
  Invocation inv = Migrate("db-1");
  inv.wait = true;
  inv.timeout = std::chrono::seconds(20);
  std::ostringstream out, err;
  std::thread driver([&] {
    AwaitWatch(fake);
    std::string name =
        fake.List(kube::kVirtualMachineInstanceMigrations, "prod")["items"][0]["metadata"]["name"];
    json applied = {{"type", "addedNodeSelectorTermApplied"},
                    {"status", "True"},
                    {"reason", "TermApplied"},
                    {"message", "ANDed into pod p"}};
    Advance(fake, "prod", name,
            {json{{"phase", "Scheduling"}, {"conditions", json::array({applied})}},
             json{{"phase", "Running"},
                  {"conditions", json::array({applied})},
                  {"migrationState", {{"targetNode", "worker-3"}}}},
             json{{"phase", "Succeeded"},
                  {"conditions", json::array({applied})},
                  {"migrationState", {{"targetNode", "worker-3"}}}}});
  });
  int rc = RunMigrate(inv, "prod", NodeTerm("worker-3"), fake, {out, err});
  driver.join();
  CHECK(rc == 0);
  CHECK(err.str().empty());
  std::string o = out.str();
  CAPTURE(o);
  CHECK(o.find("phase: Scheduling\n") != std::string::npos);
  CHECK(o.find("condition addedNodeSelectorTermApplied=True (TermApplied): ANDed into pod p\n") !=
        std::string::npos);
  CHECK(o.find("phase: Running (target node worker-3)\n") != std::string::npos);
  CHECK(o.find("phase: Succeeded (target node worker-3)\n") != std::string::npos);
  // The condition is printed once, not on every event.
  CHECK(o.find("condition addedNodeSelectorTermApplied") ==
        o.rfind("condition addedNodeSelectorTermApplied"));
}

TEST_CASE("--wait exits 1 with the reason when the migration fails") {
  kube::FakeClient fake;
  AddVmi(fake, "prod", "db-1");
  Invocation inv = Migrate("db-1");
  inv.wait = true;
  std::ostringstream out, err;
  std::thread driver([&] {
    AwaitWatch(fake);
    std::string name =
        fake.List(kube::kVirtualMachineInstanceMigrations, "prod")["items"][0]["metadata"]["name"];
    json unsched = {{"type", "targetPodUnschedulable"},
                    {"status", "True"},
                    {"reason", "Unschedulable"},
                    {"message", "worker-3: cordoned"}};
    Advance(fake, "prod", name,
            {json{{"phase", "Scheduling"}, {"conditions", json::array({unsched})}},
             json{{"phase", "Failed"}, {"conditions", json::array({unsched})}}});
  });
  int rc = RunMigrate(inv, "prod", NodeTerm("worker-3"), fake, {out, err});
  driver.join();
  CHECK(rc == 1);
  CHECK(err.str().find("failed: target pod unschedulable: Unschedulable worker-3: cordoned") !=
        std::string::npos);
}

TEST_CASE("--wait times out with the last known state") {
  kube::FakeClient fake;
  AddVmi(fake, "prod", "db-1");
  Invocation inv = Migrate("db-1");
  inv.wait = true;
  inv.timeout = std::chrono::milliseconds(300);
  std::ostringstream out, err;
  const base::Stopwatch start;  // the deadline's timer cancels a blocked watch: real time
  CHECK(RunMigrate(inv, "prod", NodeTerm("worker-3"), fake, {out, err}) == 1);
  CHECK(start.Elapsed() < std::chrono::seconds(10));
  CHECK(err.str().rfind("error: timed out after 300ms waiting for migration ", 0) == 0);
}

// A server whose watches answer with one ERROR event carrying `status`, then end.
class ErroringWatches : public kube::FakeClient {
 public:
  explicit ErroringWatches(json status) : status_(std::move(status)) {}
  std::unique_ptr<kube::WatchStream> Watch(const kube::Resource&, std::string_view,
                                           const kube::WatchOptions&) override {
    ++watches;
    struct Stream : kube::WatchStream {
      json status;
      bool sent = false;
      std::optional<kube::WatchEvent> Next() override {
        if (sent) return std::nullopt;
        sent = true;
        return kube::WatchEvent{"ERROR", status};
      }
      void Cancel() override {}
    };
    auto stream = std::make_unique<Stream>();
    stream->status = status_;
    return stream;
  }
  int watches = 0;

 private:
  json status_;
};

TEST_CASE(
    "--wait stops on a watch ERROR that is not 410 instead of re-watching until the timeout") {
  ErroringWatches fake(json::parse(R"({"kind": "Status", "apiVersion": "v1", "status": "Failure",
      "code": 403, "reason": "Forbidden", "message": "watch is not allowed"})"));
  AddVmi(fake, "prod", "db-1");
  Invocation inv = Migrate("db-1");
  inv.wait = true;
  inv.timeout = std::chrono::seconds(30);
  std::ostringstream out, err;
  const base::Stopwatch start;
  CHECK(RunMigrate(inv, "prod", NodeTerm("worker-3"), fake, {out, err}) == 1);
  CHECK(start.Elapsed() < std::chrono::seconds(10));
  CHECK(fake.watches == 1);
  CAPTURE(err.str());
  CHECK(err.str().find("watch is not allowed") != std::string::npos);
}

// A running VMIM "m-1" that virt-controller finishes (phase Succeeded) when the plugin
// first tries to watch it, whatever that watch then answers. Records the plugin's own
// calls (verb, time on `clock`, the plugin's: its back-offs advance it), not those finishing
// the migration.
struct RunningMigration {
  RunningMigration(kube::FakeClient& fake, const base::Clock& clock) {
    json created = fake.Create(kube::kVirtualMachineInstanceMigrations, "prod",
                               json{{"apiVersion", "kubevirt.io/v1"},
                                    {"kind", "VirtualMachineInstanceMigration"},
                                    {"metadata", {{"name", "m-1"}, {"namespace", "prod"}}},
                                    {"spec", {{"vmiName", "db-1"}}}});
    Advance(fake, "prod", "m-1", {json{{"phase", "Running"}}});
    fake.SetCallHook([this, &fake, &clock](const kube::FakeCall& c) {
      if (finishing) return;
      {
        std::scoped_lock lock(mu);
        calls.emplace_back(c.verb, clock.Now());
      }
      if (c.verb == kube::Verb::kWatch && !finished) {
        finishing = finished = true;
        Advance(fake, "prod", "m-1", {json{{"phase", "Succeeded"}}});
        finishing = false;
      }
    });
  }
  std::mutex mu;
  std::vector<std::pair<kube::Verb, base::SteadyTime>> calls;
  bool finishing = false;  // the plugin's client calls all run on the test's thread
  bool finished = false;
};

TEST_CASE("--wait settles a failed call by its disposition: retried, re-read or final") {
  struct Row {
    const char* what;
    kube::KubeError error;
    int rc;
  };
  const Row row = GENERATE(values<Row>({
      {"503: retried", kube::ErrorFromResponse(503, "", std::nullopt, "watch"), 0},
      {"a malformed event (Internal): retried",
       kube::KubeError(kube::ErrorKind::kInternal, "watch: malformed watch event"), 0},
      {"a broken connection: retried", kube::KubeError(kube::ErrorKind::kTransport, "watch: EOF"),
       0},
      {"HTTP 410 on the watch request: re-read",
       kube::ErrorFromResponse(410,
                               R"({"kind":"Status","code":410,"reason":"Expired",)"
                               R"("message":"too old resource version"})",
                               std::nullopt, "watch"),
       0},
      {"403: final", kube::ErrorFromResponse(403, "", std::nullopt, "watch"), 1},
      {"404: deleted", kube::ErrorFromResponse(404, "", std::nullopt, "watch"), 1},
  }));
  CAPTURE(row.what);
  kube::FakeClient fake;
  base::FakeClock clock;
  RunningMigration m(fake, clock);
  fake.FailNextWith(kube::Verb::kWatch, 1, row.error);
  std::ostringstream out, err;
  CHECK(WaitForMigration("prod", "m-1", "", std::chrono::seconds(20), fake, {out, err}, clock) ==
        row.rc);
  CAPTURE(err.str());
  if (row.rc == 0) CHECK(out.str() == "phase: Running\nphase: Succeeded\n");
  if (row.rc == 1) CHECK_FALSE(err.str().empty());
}

TEST_CASE("--wait retries a 429 no earlier than its Retry-After") {
  kube::FakeClient fake;
  base::FakeClock clock;
  RunningMigration m(fake, clock);
  fake.FailNextWith(
      kube::Verb::kWatch, 1,
      kube::ErrorFromResponse(429,
                              R"({"kind":"Status","code":429,"reason":"TooManyRequests",)"
                              R"("message":"too many requests, please try again later"})",
                              std::chrono::seconds(1), "watch"));
  std::ostringstream out, err;
  CHECK(WaitForMigration("prod", "m-1", "", std::chrono::seconds(20), fake, {out, err}, clock) ==
        0);
  std::scoped_lock lock(m.mu);
  REQUIRE(m.calls.size() == 3);
  CHECK(m.calls[0].first == kube::Verb::kGet);
  CHECK(m.calls[1].first == kube::Verb::kWatch);  // refused: 429, Retry-After: 1
  CHECK(m.calls[2].first == kube::Verb::kGet);    // the retry re-reads
  CHECK(m.calls[2].second - m.calls[1].second >= std::chrono::seconds(1));
}

TEST_CASE("--wait does not sleep a Retry-After past its deadline") {
  kube::FakeClient fake;
  base::FakeClock clock;
  RunningMigration m(fake, clock);
  m.finished = true;  // it never finishes
  fake.FailNextWith(kube::Verb::kWatch, 1,
                    kube::ErrorFromResponse(503, "", std::chrono::seconds(3600), "watch"));
  std::ostringstream out, err;
  const base::Stopwatch start;
  CHECK(WaitForMigration("prod", "m-1", "", std::chrono::milliseconds(300), fake, {out, err},
                         clock) == 1);
  CHECK(start.Elapsed() < std::chrono::seconds(10));
  CHECK(err.str().rfind("error: timed out after 300ms waiting for migration m-1", 0) == 0);
}

// Answers the VMIM read with `get`, and each watch with `events` (then the end of the
// stream): the shapes a confused proxy or a broken aggregated server could send.
class OddAnswers : public kube::FakeClient {
 public:
  OddAnswers(json get, std::vector<kube::WatchEvent> events)
      : get_(std::move(get)), events_(std::move(events)) {}
  json Get(const kube::Resource&, std::string_view, std::string_view, std::string_view) override {
    return get_;
  }
  std::unique_ptr<kube::WatchStream> Watch(const kube::Resource&, std::string_view,
                                           const kube::WatchOptions&) override {
    struct Stream : kube::WatchStream {
      std::vector<kube::WatchEvent> events;
      size_t next = 0;
      std::optional<kube::WatchEvent> Next() override {
        if (next == events.size()) return std::nullopt;
        return events[next++];
      }
      void Cancel() override {}
    };
    auto stream = std::make_unique<Stream>();
    stream->events = events_;
    return stream;
  }

 private:
  json get_;
  std::vector<kube::WatchEvent> events_;
};

TEST_CASE("--wait reads odd VMIM answers and events as absent fields, never throwing") {
  const kube::WatchEvent succeeded{"MODIFIED",
                                   json::parse(R"({"status": {"phase": "Succeeded"}})")};
  struct Row {
    const char* get;
    std::vector<kube::WatchEvent> events;
    int rc;
    std::string out;
    std::string err;
  };
  const Row row = GENERATE_COPY(values<Row>({
      {R"({"metadata": {"resourceVersion": 5}, "status": "Running"})",
       {succeeded},
       0,
       "phase: Succeeded\n",
       ""},
      {R"([])", {succeeded}, 0, "phase: Succeeded\n", ""},
      {R"(null)", {succeeded}, 0, "phase: Succeeded\n", ""},
      {R"({"status": {"phase": 7, "conditions": "x"}})", {succeeded}, 0, "phase: Succeeded\n", ""},
      {R"({"status": {"phase": "Running", "conditions": [
          {"type": "addedNodeSelectorTermApplied", "status": true, "reason": 5, "message": null},
          "x", null, [], {"type": 1}]}})",
       {succeeded},
       0,
       "phase: Running\ncondition addedNodeSelectorTermApplied= (): \nphase: Succeeded\n",
       ""},
      {R"({"status": {"phase": "Running", "migrationState": "x"}})",
       {{"MODIFIED", json::parse(R"({"metadata": "m", "status": {"phase": "Scheduling",
            "migrationState": {"targetNode": ["w1"]}}})")},
        {"BOOKMARK", json::parse(R"({"metadata": {"resourceVersion": {"v": 1}}})")},
        {"MODIFIED", json::parse(R"({"metadata": [], "status": {"phase": "Failed",
            "migrationState": {"failureReason": 7}}})")}},
       1,
       "phase: Running\nphase: Scheduling\nphase: Failed\n",
       "error: migration m-1 failed: see 'kubectl migrate status '\n"},
      {R"({"status": {"phase": "Running"}})",
       {{"ERROR", json::parse(R"({"kind": "Status", "code": 403, "reason": "Forbidden",
            "message": 5})")}},
       1,
       "phase: Running\n",
       "error: watch virtualmachineinstancemigration m-1: HTTP 403 Forbidden: Forbidden\n"},
  }));
  CAPTURE(row.get);
  OddAnswers client(json::parse(row.get), row.events);
  std::ostringstream out, err;
  int rc = -1;
  REQUIRE_NOTHROW(
      rc = WaitForMigration("prod", "m-1", "", std::chrono::seconds(20), client, {out, err}));
  CHECK(rc == row.rc);
  CHECK(out.str() == row.out);
  CHECK(err.str() == row.err);
}

TEST_CASE("FormatKubeError prints a Status of any shape") {
  auto format = [](const char* status) {
    return FormatKubeError(kube::ErrorFromStatus(403, json::parse(status), "create vmim"));
  };
  CHECK(format(R"({"kind": "Status", "reason": "Forbidden", "message": "no"})") ==
        "Error from server (Forbidden): no");
  CHECK(format(R"({"kind": "Status", "message": "no"})") == "Error from server: no");
  CHECK(format(R"({"kind": "Status", "reason": 5, "message": "no"})") == "Error from server: no");
  CHECK(format(R"({"kind": "Status", "reason": "Forbidden", "message": 5})") ==
        "error: create vmim: HTTP 403 Forbidden: Forbidden");
  CHECK(format(R"({"kind": "Status", "reason": "Forbidden", "message": null})") ==
        "error: create vmim: HTTP 403 Forbidden: Forbidden");
  CHECK(format(R"(["no"])") == R"(error: create vmim: HTTP 403 Forbidden: ["no"])");
}

}  // namespace
}  // namespace kmt::cli
