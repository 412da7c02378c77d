// controller/leader_election_test.cc — two candidates on simulated time
// against the in-memory API server.
#include "controller/leader_election.h"

#include <catch2/catch.hpp>
#include <memory>
#include <vector>

#include "base/fake_clock.h"
#include "kube/fake_client.h"
#include "kube/resources.h"

namespace kmt::controller {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

struct Candidate {
  std::string id;
  int started = 0;
  int stopped = 0;
  std::vector<std::string> leaders;
  std::vector<std::string> errors;  // "what: error"
  std::unique_ptr<LeaderElector> elector;
};

struct World {
  base::FakeClock clock;
  kube::FakeClient client{kube::FakeClient::Options{10000, &clock}};

  std::unique_ptr<Candidate> Make(const std::string& id) {
    auto c = std::make_unique<Candidate>();
    c->id = id;
    LeaderElectionConfig cfg;
    cfg.lease_namespace = "kmt-system";
    cfg.lease_name = "migration-target-operator";
    cfg.identity = id;
    cfg.jitter = [](base::Duration) { return base::Duration::zero(); };
    Candidate* raw = c.get();
    cfg.on_started_leading = [raw] { ++raw->started; };
    cfg.on_stopped_leading = [raw] { ++raw->stopped; };
    cfg.on_new_leader = [raw](const std::string& h) { raw->leaders.push_back(h); };
    cfg.on_error = [raw](const std::string& what, const std::string& error) {
      raw->errors.push_back(what + ": " + error);
    };
    c->elector = std::make_unique<LeaderElector>(client, clock, cfg);
    return c;
  }

  LeaseRecord Lease() {
    return LeaseRecord::FromLease(
        client.Get(kube::kLeases, "kmt-system", "migration-target-operator"));
  }

  std::string At(base::Duration since_start) {
    return base::FormatMicroTime(base::WallTime(std::chrono::seconds(1767225600)) +
                                 std::chrono::duration_cast<base::WallTime::duration>(since_start));
  }
};

TEST_CASE("A lone candidate creates the lease and renews it every retry period") {
  World w;
  auto a = w.Make("a");
  a->elector->Start();
  w.clock.Advance(base::Duration::zero());
  REQUIRE(a->elector->IsLeader());
  REQUIRE(a->started == 1);
  REQUIRE(a->leaders == std::vector<std::string>{"a"});
  REQUIRE(w.Lease() == LeaseRecord{"a", 15, w.At(seconds(0)), w.At(seconds(0)), 0});

  w.clock.Advance(seconds(2));
  REQUIRE(w.Lease() == LeaseRecord{"a", 15, w.At(seconds(0)), w.At(seconds(2)), 0});
  w.clock.Advance(seconds(60));
  REQUIRE(w.Lease() == LeaseRecord{"a", 15, w.At(seconds(0)), w.At(seconds(62)), 0});
  REQUIRE(a->started == 1);
  REQUIRE(a->stopped == 0);
}

TEST_CASE("A second candidate waits while the lease is renewed") {
  World w;
  auto a = w.Make("a");
  auto b = w.Make("b");
  a->elector->Start();
  w.clock.Advance(base::Duration::zero());
  b->elector->Start();
  w.clock.Advance(seconds(120));
  REQUIRE(a->elector->IsLeader());
  REQUIRE_FALSE(b->elector->IsLeader());
  REQUIRE(b->elector->ObservedHolder() == "a");
  REQUIRE(b->leaders == std::vector<std::string>{"a"});
  REQUIRE(b->started == 0);
}

TEST_CASE("When the leader dies, the other takes over once the lease expired on its clock") {
  World w;
  auto a = w.Make("a");
  auto b = w.Make("b");
  a->elector->Start();
  w.clock.Advance(base::Duration::zero());
  b->elector->Start();
  w.clock.Advance(seconds(1));  // b has seen a's record (renewed at t=0)
  w.clock.Advance(milliseconds(500));
  a->elector.reset();  // kill -9: no release; last renewal at t=0
  // b last saw the record change at t=0 (its first attempt); its retries
  // at 2, 4, ... 14 s keep seeing the same record.
  w.clock.Advance(milliseconds(12500));  // t = 14 s
  REQUIRE_FALSE(b->elector->IsLeader());
  w.clock.Advance(seconds(2));  // t = 16 s: 15 s after b observed it
  REQUIRE(b->elector->IsLeader());
  REQUIRE(b->started == 1);
  REQUIRE(w.Lease() == LeaseRecord{"b", 15, w.At(seconds(16)), w.At(seconds(16)), 1});
  REQUIRE(b->leaders == std::vector<std::string>{"a", "b"});
}

TEST_CASE("Expiry is judged by when we saw the record change, not its renewTime") {
  World w;
  // A lease written long ago by someone else, with a renewTime far in the past.
  w.client.Create(
      kube::kLeases, "kmt-system",
      {{"apiVersion", "coordination.k8s.io/v1"},
       {"kind", "Lease"},
       {"metadata", {{"name", "migration-target-operator"}, {"namespace", "kmt-system"}}},
       {"spec",
        LeaseRecord{"old", 15, "2020-01-01T00:00:00.000000Z", "2020-01-01T00:00:00.000000Z", 4}
            .ToSpec()}});
  auto b = w.Make("b");
  b->elector->Start();
  w.clock.Advance(seconds(14));
  REQUIRE_FALSE(b->elector->IsLeader());
  w.clock.Advance(seconds(2));
  REQUIRE(b->elector->IsLeader());
  REQUIRE(w.Lease() == LeaseRecord{"b", 15, w.At(seconds(16)), w.At(seconds(16)), 5});
}

TEST_CASE("A conflict on renew is retried; the leader keeps the lease") {
  World w;
  auto a = w.Make("a");
  a->elector->Start();
  w.clock.Advance(base::Duration::zero());
  w.client.FailNext(kube::Verb::kUpdate, 2, kube::ErrorKind::kConflict,
                    "leases.coordination.k8s.io");
  w.clock.Advance(seconds(4));  // renewals at 2 and 4 fail
  REQUIRE(a->elector->IsLeader());
  REQUIRE(w.Lease().renew_time == w.At(seconds(0)));
  w.clock.Advance(seconds(2));
  REQUIRE(w.Lease().renew_time == w.At(seconds(6)));
  REQUIRE(a->stopped == 0);
  CHECK(a->errors.empty());  // a 409 is the normal race, not an error
}

TEST_CASE("Two candidates racing to create: exactly one wins") {
  World w;
  auto a = w.Make("a");
  auto b = w.Make("b");
  a->elector->Start();
  b->elector->Start();
  w.clock.Advance(base::Duration::zero());
  REQUIRE(a->elector->IsLeader() != b->elector->IsLeader());
  w.clock.Advance(seconds(60));
  REQUIRE(a->elector->IsLeader() != b->elector->IsLeader());
  REQUIRE(a->started + b->started == 1);
}

TEST_CASE("A leader that cannot renew within the renew deadline stops leading") {
  World w;
  auto a = w.Make("a");
  a->elector->Start();
  w.clock.Advance(base::Duration::zero());
  w.client.FailNext(kube::Verb::kGet, 100, kube::ErrorKind::kUnavailable);
  // Last renewal at t=0; the round starts at t=2; attempts at 2,4,6,8,10 fail;
  // at t=12 the 10 s renew deadline has passed.
  w.clock.Advance(seconds(10));
  REQUIRE(a->elector->IsLeader());
  w.clock.Advance(seconds(2));
  REQUIRE_FALSE(a->elector->IsLeader());
  REQUIRE(a->stopped == 1);
  // Every failed attempt was reported (no silent catch), naming the call.
  REQUIRE(a->errors.size() >= 5);
  CHECK(a->errors[0].rfind("get lease: ", 0) == 0);
  // Final: it does not try again even when the API is back.
  w.client.FailNext(kube::Verb::kGet, 0, kube::ErrorKind::kUnavailable);
  w.clock.Advance(seconds(60));
  REQUIRE(a->stopped == 1);
  REQUIRE(a->started == 1);
  REQUIRE(w.clock.PendingTimers() == 0);
}

TEST_CASE("Another holder's takeover is noticed and leadership ends at the deadline") {
  World w;
  auto a = w.Make("a");
  a->elector->Start();
  w.clock.Advance(base::Duration::zero());
  // Someone overwrites the lease (e.g. an admin forcing a failover).
  auto lease = w.client.Get(kube::kLeases, "kmt-system", "migration-target-operator");
  lease["spec"]["holderIdentity"] = "intruder";
  w.client.Update(kube::kLeases, "kmt-system", lease);
  w.clock.Advance(seconds(12));
  REQUIRE_FALSE(a->elector->IsLeader());
  REQUIRE(a->stopped == 1);
  REQUIRE(a->leaders == std::vector<std::string>{"a", "intruder"});
  REQUIRE(w.Lease().holder_identity == "intruder");
}

TEST_CASE("Stop releases the lease so a successor acquires at once") {
  World w;
  auto a = w.Make("a");
  auto b = w.Make("b");
  a->elector->Start();
  w.clock.Advance(base::Duration::zero());
  b->elector->Start();
  w.clock.Advance(seconds(5));
  a->elector->Stop();  // SIGTERM
  REQUIRE_FALSE(a->elector->IsLeader());
  REQUIRE(a->stopped == 0);  // the caller is stopping anyway
  REQUIRE(w.Lease() == LeaseRecord{"", 1, w.At(seconds(5)), w.At(seconds(5)), 0});
  w.clock.Advance(seconds(2));  // b's next retry
  REQUIRE(b->elector->IsLeader());
  REQUIRE(w.Lease() == LeaseRecord{"b", 15, w.At(seconds(6)), w.At(seconds(6)), 1});
  a->elector->Stop();  // idempotent
  REQUIRE(w.Lease().holder_identity == "b");
}

TEST_CASE("Stop of a non-leader does not touch the lease") {
  World w;
  auto a = w.Make("a");
  auto b = w.Make("b");
  a->elector->Start();
  w.clock.Advance(base::Duration::zero());
  b->elector->Start();
  w.clock.Advance(seconds(3));
  const int64_t rv = w.client.ResourceVersion();
  b->elector->Stop();
  REQUIRE(w.client.ResourceVersion() == rv);
  REQUIRE(w.Lease().holder_identity == "a");
}

}  // namespace
}  // namespace kmt::controller
