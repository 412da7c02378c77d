// kube/fake_client_test.cc — the fake behaves like kube-apiserver where the
// project relies on it.
#include "kube/fake_client.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "kube/managed_fields.h"
#include "kube/resources.h"

namespace kmt::kube {
namespace {

Json Pod(const std::string& name, Json labels = Json::object(), const std::string& node = "") {
  Json p = {{"metadata", {{"name", name}, {"labels", labels}}},
            {"spec", {{"containers", Json::array({{{"name", "c"}}})}}}};
  if (!node.empty()) p["spec"]["nodeName"] = node;
  return p;
}

// Runs f, which must throw a KubeError; returns it.
template <typename F>
KubeError Catch(F&& f) {
  try {
    f();
  } catch (const KubeError& e) {
    return e;
  }
  FAIL("no KubeError thrown");
  throw std::logic_error("unreachable");
}

std::string Rv(const Json& obj) { return obj["metadata"]["resourceVersion"].get<std::string>(); }

TEST_CASE("Create assigns server-side metadata") {
  FakeClient c;
  Json a = c.Create(kPods, "ns", Pod("a"));
  CHECK(a["metadata"]["uid"] == "00000000-0000-4000-8000-000000000001");
  CHECK(Rv(a) == "1");
  CHECK(a["metadata"]["generation"] == 1);
  CHECK(a["metadata"]["namespace"] == "ns");
  CHECK(a["metadata"]["creationTimestamp"] == "2026-01-01T00:00:00Z");
  CHECK(a["kind"] == "Pod");
  CHECK(a["apiVersion"] == "v1");
  CHECK(a["status"] == Json{{"phase", "Pending"}});
  CHECK(c.Get(kPods, "ns", "a") == a);

  Json b = c.Create(kPods, "ns", Pod("b"));
  CHECK(Rv(b) == "2");
  CHECK(b["metadata"]["uid"] == "00000000-0000-4000-8000-000000000002");

  Json gen = Pod("");
  gen["metadata"].erase("name");
  gen["metadata"]["generateName"] = "virt-launcher-";
  Json g = c.Create(kPods, "ns", gen);
  CHECK(g["metadata"]["name"] == "virt-launcher-cbbbb");
  CHECK(c.Count(kPods) == 3);
}

TEST_CASE("Create errors mirror the API server") {
  FakeClient c;
  c.Create(kPods, "ns", Pod("a"));
  KubeError dup = Catch([&] { c.Create(kPods, "ns", Pod("a")); });
  CHECK(dup.kind() == ErrorKind::kConflict);
  CHECK(dup.http_status() == 409);
  CHECK(dup.status()["reason"] == "AlreadyExists");
  CHECK(std::string(dup.what()) ==
        "create pods ns/a: HTTP 409 Conflict: pods \"a\" already exists");

  Json anonymous = Pod("");
  anonymous["metadata"].erase("name");
  KubeError noname = Catch([&] { c.Create(kPods, "ns", anonymous); });
  CHECK(noname.kind() == ErrorKind::kInvalid);
  CHECK(std::string(noname.what()) ==
        "create pods -n ns: HTTP 422 Invalid: Pod \"\" is invalid: metadata.name: Required value: "
        "name or generateName is required");

  Json other_ns = Pod("x");
  other_ns["metadata"]["namespace"] = "elsewhere";
  CHECK(Catch([&] { c.Create(kPods, "ns", other_ns); }).kind() == ErrorKind::kInvalid);

  Json with_rv = Pod("y");
  with_rv["metadata"]["resourceVersion"] = "5";
  CHECK(Catch([&] { c.Create(kPods, "ns", with_rv); }).http_status() == 500);
}

TEST_CASE("Cluster-scoped resources and custom resources") {
  FakeClient c;
  Json node = {{"metadata", {{"name", "n1"}, {"namespace", "dropped"}}},
               {"status", {{"allocatable", {{"cpu", "4"}}}}}};
  Json n = c.Create(kNodes, "", node);
  CHECK_FALSE(n["metadata"].contains("namespace"));
  CHECK(n["status"]["allocatable"]["cpu"] == "4");  // nodes keep status on create
  CHECK(c.Get(kNodes, "", "n1")["metadata"]["name"] == "n1");

  Json vmim = {{"metadata", {{"name", "m"}}},
               {"spec", {{"vmiName", "vm"}}},
               {"status", {{"phase", "Succeeded"}}}};
  Json m = c.Create(kVirtualMachineInstanceMigrations, "ns", vmim);
  CHECK_FALSE(m.contains("status"));  // custom resources drop status on create
  CHECK(m["apiVersion"] == "kubevirt.io/v1");
  KubeError nf = Catch([&] { c.Get(kVirtualMachineInstanceMigrations, "ns", "nope"); });
  CHECK(nf.kind() == ErrorKind::kNotFound);
  CHECK(std::string(nf.what()) ==
        "get virtualmachineinstancemigrations.kubevirt.io ns/nope: HTTP 404 NotFound: "
        "virtualmachineinstancemigrations.kubevirt.io \"nope\" not found");
  CHECK(nf.status()["details"] == Json{{"name", "nope"},
                                       {"kind", "virtualmachineinstancemigrations"},
                                       {"group", "kubevirt.io"}});
}

TEST_CASE("Update is a compare-and-swap on resourceVersion") {
  FakeClient c;
  Json a = c.Create(kPods, "ns", Pod("a"));
  Json changed = a;
  changed["metadata"]["labels"]["x"] = "1";
  Json a2 = c.Update(kPods, "ns", changed);
  CHECK(Rv(a2) == "2");
  CHECK(a2["metadata"]["generation"] == 1);  // metadata-only change

  KubeError stale = Catch([&] { c.Update(kPods, "ns", changed); });  // still carries rv 1
  CHECK(stale.kind() == ErrorKind::kConflict);
  CHECK(std::string(stale.what()) ==
        "update pods ns/a: HTTP 409 Conflict: Operation cannot be fulfilled on pods \"a\": the "
        "object has been modified; please apply your changes to the latest version and try again");

  Json spec = a2;
  spec["spec"]["nodeName"] = "n1";
  Json a3 = c.Update(kPods, "ns", spec);
  CHECK(a3["metadata"]["generation"] == 2);
  CHECK(a3["metadata"]["uid"] == a["metadata"]["uid"]);

  // An update that changes nothing stores nothing.
  Json same = c.Update(kPods, "ns", a3);
  CHECK(Rv(same) == Rv(a3));
  CHECK(c.ResourceVersion() == 3);

  // Unconditional update (no resourceVersion) is allowed.
  Json blind = a3;
  blind["metadata"].erase("resourceVersion");
  blind["metadata"]["annotations"] = {{"k", "v"}};
  CHECK(Rv(c.Update(kPods, "ns", blind)) == "4");

  Json missing = Pod("zz");
  CHECK(Catch([&] { c.Update(kPods, "ns", missing); }).kind() == ErrorKind::kNotFound);

  Json wrong_uid = c.Get(kPods, "ns", "a");
  wrong_uid["metadata"]["uid"] = "other";
  KubeError uid = Catch([&] { c.Update(kPods, "ns", wrong_uid); });
  CHECK(uid.kind() == ErrorKind::kConflict);
}

TEST_CASE("Status subresource separates .status from the rest") {
  FakeClient c;
  Json a = c.Create(kPods, "ns", Pod("a"));

  Json main_write = a;
  main_write["status"]["phase"] = "Running";
  main_write["metadata"]["labels"]["l"] = "v";
  Json after_main = c.Update(kPods, "ns", main_write);
  CHECK(after_main["status"]["phase"] == "Pending");  // ignored on the main resource
  CHECK(after_main["metadata"]["labels"]["l"] == "v");

  Json status_write = after_main;
  status_write["status"]["phase"] = "Running";
  status_write["metadata"]["labels"]["l"] = "ignored";
  status_write["spec"]["nodeName"] = "ignored";
  Json after_status = c.Update(kPods, "ns", status_write, "status");
  CHECK(after_status["status"]["phase"] == "Running");
  CHECK(after_status["metadata"]["labels"]["l"] == "v");
  CHECK_FALSE(after_status["spec"].contains("nodeName"));
  CHECK(after_status["metadata"]["generation"] == 1);
  CHECK(c.Get(kPods, "ns", "a", "status") == after_status);

  // Resources without a status subresource refuse it, and keep .status on main writes.
  Json lease = c.Create(kLeases, "ns", {{"metadata", {{"name", "l"}}}, {"spec", Json::object()}});
  CHECK(Catch([&] { c.Update(kLeases, "ns", lease, "status"); }).kind() == ErrorKind::kNotFound);
  c.SetStatusSubresource(kPods, false);
  Json pod_now = c.Get(kPods, "ns", "a");
  pod_now["status"]["phase"] = "Succeeded";
  CHECK(c.Update(kPods, "ns", pod_now)["status"]["phase"] == "Succeeded");
}

TEST_CASE("JSON Patch with a test op, and merge patch") {
  FakeClient c;
  Json vmim = c.Create(kVirtualMachineInstanceMigrations, "ns",
                       {{"metadata", {{"name", "m"}}}, {"spec", {{"vmiName", "vm"}}}});
  const Json ops = Json::array({
      {{"op", "test"}, {"path", "/metadata/resourceVersion"}, {"value", Rv(vmim)}},
      {{"op", "add"}, {"path", "/status"}, {"value", {{"conditions", Json::array()}}}},
  });
  Json patched =
      c.Patch(kVirtualMachineInstanceMigrations, "ns", "m", PatchType::kJsonPatch, ops, "status");
  CHECK(patched["status"] == Json{{"conditions", Json::array()}});
  CHECK(Rv(patched) == "2");

  // Same patch again: the test op fails on the new resourceVersion.
  KubeError failed = Catch([&] {
    c.Patch(kVirtualMachineInstanceMigrations, "ns", "m", PatchType::kJsonPatch, ops, "status");
  });
  CHECK(failed.http_status() == 422);
  CHECK(failed.status()["reason"] == "Invalid");
  CHECK(failed.kind() == ErrorKind::kConflict);
  CHECK(std::string(failed.what()) ==
        "patch virtualmachineinstancemigrations.kubevirt.io ns/m (status): HTTP 422 Conflict: the "
        "server rejected our request due to an error in our request");
  CHECK(c.ResourceVersion() == 2);

  // A main-resource patch cannot touch status.
  Json main = c.Patch(kVirtualMachineInstanceMigrations, "ns", "m", PatchType::kMergePatch,
                      {{"metadata", {{"annotations", {{"a", "1"}}}}}, {"status", nullptr}});
  CHECK(main["metadata"]["annotations"]["a"] == "1");
  CHECK(main["status"] == Json{{"conditions", Json::array()}});

  // A merge patch carrying a stale resourceVersion is a conflict.
  KubeError stale = Catch([&] {
    c.Patch(kVirtualMachineInstanceMigrations, "ns", "m", PatchType::kMergePatch,
            {{"metadata", {{"resourceVersion", "1"}, {"labels", {{"x", "y"}}}}}});
  });
  CHECK(stale.kind() == ErrorKind::kConflict);
  CHECK(stale.http_status() == 409);

  CHECK(Catch([&] {
          c.Patch(kVirtualMachineInstanceMigrations, "ns", "m", PatchType::kJsonPatch,
                  Json::object());
        }).kind() == ErrorKind::kInvalid);
  CHECK(Catch([&] {
          c.Patch(kVirtualMachineInstanceMigrations, "ns", "gone", PatchType::kMergePatch,
                  Json::object());
        }).kind() == ErrorKind::kNotFound);
}

TEST_CASE("Delete with preconditions and finalizers") {
  FakeClient c;
  Json a = c.Create(kPods, "ns", Pod("a"));
  DeleteOptions wrong_uid;
  wrong_uid.precondition_uid = "x";
  KubeError uid = Catch([&] { c.Delete(kPods, "ns", "a", wrong_uid); });
  CHECK(uid.kind() == ErrorKind::kConflict);
  CHECK(std::string(uid.what()) ==
        "delete pods ns/a: HTTP 409 Conflict: Operation cannot be fulfilled on pods \"a\": "
        "Precondition failed: UID in precondition: x, UID in object meta: "
        "00000000-0000-4000-8000-000000000001");
  DeleteOptions wrong_rv;
  wrong_rv.precondition_resource_version = "7";
  CHECK(Catch([&] { c.Delete(kPods, "ns", "a", wrong_rv); }).kind() == ErrorKind::kConflict);

  DeleteOptions dry;
  dry.dry_run = true;
  c.Delete(kPods, "ns", "a", dry);
  CHECK(c.Count(kPods) == 1);

  DeleteOptions good;
  good.precondition_uid = a["metadata"]["uid"].get<std::string>();
  good.precondition_resource_version = Rv(a);
  c.Delete(kPods, "ns", "a", good);
  CHECK(c.Count(kPods) == 0);
  CHECK(Catch([&] { c.Delete(kPods, "ns", "a"); }).kind() == ErrorKind::kNotFound);

  Json fin = Pod("f");
  fin["metadata"]["finalizers"] = {"example.com/keep"};
  c.Create(kPods, "ns", fin);
  Json marked = c.Delete(kPods, "ns", "f");
  CHECK(marked["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:00Z");
  CHECK(c.Count(kPods) == 1);
  c.Patch(kPods, "ns", "f", PatchType::kJsonPatch,
          Json::array({{{"op", "remove"}, {"path", "/metadata/finalizers"}}}));
  CHECK(c.Count(kPods) == 0);
}

TEST_CASE("Dry run computes the answer and stores nothing") {
  FakeClient c;
  WriteOptions dry;
  dry.dry_run = true;
  Json would = c.Create(kPods, "ns", Pod("a"), dry);
  CHECK(would["metadata"]["name"] == "a");
  CHECK(c.Count(kPods) == 0);
  CHECK(c.ResourceVersion() == 0);
  Json a = c.Create(kPods, "ns", Pod("a"));
  Json changed = a;
  changed["metadata"]["labels"]["x"] = "1";
  CHECK(c.Update(kPods, "ns", changed, "", dry)["metadata"]["labels"]["x"] == "1");
  CHECK(c.Patch(kPods, "ns", "a", PatchType::kMergePatch,
                {{"metadata", {{"labels", {{"y", "2"}}}}}}, "",
                dry)["metadata"]["labels"]["y"] == "2");
  CHECK(c.Get(kPods, "ns", "a") == a);
  const std::vector<FakeCall> calls = c.Calls();
  CHECK(calls[calls.size() - 2].verb == Verb::kPatch);
  CHECK(calls[calls.size() - 2].dry_run);
}

TEST_CASE("List filters by namespace, labels and fields, and pages") {
  FakeClient c;
  c.Create(kPods, "a", Pod("p1", {{"app", "x"}}, "n1"));
  c.Create(kPods, "a", Pod("p2", {{"app", "y"}}));
  c.Create(kPods, "b", Pod("p3", {{"app", "x"}, {"kubevirt.io/migrationJobUID", "u"}}, "n2"));
  c.Create(kPods, "b", Pod("p4"));
  auto names = [](const Json& list) {
    std::vector<std::string> out;
    for (const Json& i : list["items"]) {
      out.push_back(i["metadata"]["namespace"].get<std::string>() + "/" +
                    i["metadata"]["name"].get<std::string>());
    }
    return out;
  };
  struct Row {
    const char* ns;
    const char* labels;
    const char* fields;
    std::vector<std::string> want;
  };
  const Row row = GENERATE(values<Row>({
      {"", "", "", {"a/p1", "a/p2", "b/p3", "b/p4"}},
      {"b", "", "", {"b/p3", "b/p4"}},
      {"", "app=x", "", {"a/p1", "b/p3"}},
      {"", "app in (x,y),app notin (y)", "", {"a/p1", "b/p3"}},
      {"", "!app", "", {"b/p4"}},
      {"", "app!=x", "", {"a/p2", "b/p4"}},
      {"", "kubevirt.io/migrationJobUID", "", {"b/p3"}},
      {"", "", "spec.nodeName=n1", {"a/p1"}},
      {"", "", "spec.nodeName=", {"a/p2", "b/p4"}},
      {"", "", "metadata.name=p4", {"b/p4"}},
      {"", "", "metadata.namespace=a,metadata.name!=p1", {"a/p2"}},
      {"", "app=x", "spec.nodeName=n2", {"b/p3"}},
  }));
  CAPTURE(row.ns, row.labels, row.fields);
  ListOptions o;
  o.label_selector = row.labels;
  o.field_selector = row.fields;
  Json list = c.List(kPods, row.ns, o);
  CHECK(names(list) == row.want);
  CHECK(list["kind"] == "PodList");
  CHECK(list["metadata"]["resourceVersion"] == "4");
  CHECK_FALSE(list["metadata"].contains("continue"));
}

TEST_CASE("List paging follows continue tokens") {
  FakeClient c;
  for (int i = 0; i < 5; ++i) c.Create(kPods, "ns", Pod("p" + std::to_string(i)));
  ListOptions o;
  o.limit = 2;
  Json page1 = c.List(kPods, "ns", o);
  CHECK(page1["items"].size() == 2);
  CHECK(page1["metadata"]["remainingItemCount"] == 3);
  c.Create(kPods, "ns", Pod("p9"));  // lands after the cursor; the fake serves current state
  o.continue_token = page1["metadata"]["continue"];
  Json page2 = c.List(kPods, "ns", o);
  CHECK(page2["items"][0]["metadata"]["name"] == "p2");
  CHECK(page2["metadata"]["resourceVersion"] == "5");  // the snapshot of page 1
  o.continue_token = page2["metadata"]["continue"];
  Json page3 = c.List(kPods, "ns", o);
  CHECK(page3["items"].size() == 2);
  CHECK(page3["items"][1]["metadata"]["name"] == "p9");
  CHECK_FALSE(page3["metadata"].contains("continue"));

  c.Compact();
  o.continue_token = page1["metadata"]["continue"];
  KubeError old = Catch([&] { c.List(kPods, "ns", o); });
  CHECK(old.kind() == ErrorKind::kGone);

  o.continue_token = "garbage";
  CHECK(Catch([&] { c.List(kPods, "ns", o); }).kind() == ErrorKind::kInvalid);
}

TEST_CASE("List rejects what the API server rejects") {
  FakeClient c;
  ListOptions bad_label;
  bad_label.label_selector = "a in (b";
  KubeError e = Catch([&] { c.List(kPods, "ns", bad_label); });
  CHECK(e.kind() == ErrorKind::kInvalid);
  CHECK(std::string(e.what()) ==
        "list pods -n ns: HTTP 400 Invalid: label selector \"a in (b\": missing ')'");
  ListOptions bad_field;
  bad_field.field_selector = "spec.hostname=x";
  CHECK(std::string(Catch([&] { c.List(kPods, "ns", bad_field); }).what()) ==
        "list pods -n ns: HTTP 400 Invalid: field label not supported: spec.hostname");
  ListOptions exact;
  exact.resource_version = "7";
  exact.resource_version_match = "Exact";
  CHECK(Catch([&] { c.List(kPods, "ns", exact); }).kind() == ErrorKind::kGone);
}

TEST_CASE("Watch delivers live events with selector transitions") {
  FakeClient c;
  WatchOptions o;
  o.label_selector = "app=x";
  auto w = c.Watch(kPods, "ns", o);
  Json a = c.Create(kPods, "ns", Pod("a", {{"app", "x"}}));
  c.Create(kPods, "other", Pod("b", {{"app", "x"}}));  // other namespace: not seen
  c.Create(kPods, "ns", Pod("c", {{"app", "y"}}));     // not selected
  Json a2 = c.Patch(kPods, "ns", "a", PatchType::kMergePatch,
                    {{"metadata", {{"labels", {{"app", "y"}}}}}});
  c.Patch(kPods, "ns", "c", PatchType::kMergePatch, {{"metadata", {{"labels", {{"app", "x"}}}}}});
  c.Patch(kPods, "ns", "c", PatchType::kMergePatch,
          {{"metadata", {{"annotations", {{"n", "1"}}}}}});
  c.Delete(kPods, "ns", "c");

  std::vector<std::pair<std::string, std::string>> got;
  for (int i = 0; i < 5; ++i) {
    auto e = w->Next();
    REQUIRE(e);
    got.emplace_back(e->type,
                     e->object["metadata"]["name"].get<std::string>() + "@" + Rv(e->object));
  }
  CHECK(got == std::vector<std::pair<std::string, std::string>>{{"ADDED", "a@1"},
                                                                {"DELETED", "a@4"},
                                                                {"ADDED", "c@5"},
                                                                {"MODIFIED", "c@6"},
                                                                {"DELETED", "c@7"}});
  w->Cancel();
  CHECK_FALSE(w->Next().has_value());
}

TEST_CASE("Calls are recorded unless record_calls is off") {
  FakeClient on;
  on.Create(kPods, "ns", Pod("a"));
  on.Get(kPods, "ns", "a");
  CHECK(on.Calls().size() == 2);
  FakeClient off(FakeClient::Options{.record_calls = false});
  off.Create(kPods, "ns", Pod("a"));
  off.Get(kPods, "ns", "a");
  CHECK(off.Calls().empty());
}

TEST_CASE("omit_managed_fields leaves managedFields out of lists and watch events") {
  FakeClient c;
  Json fields = Json::array({{{"manager", "virt-controller"}, {"operation", "Update"}}});
  Json p = Pod("a");
  p["metadata"]["managedFields"] = fields;
  c.Create(kPods, "ns", p);
  CHECK(c.List(kPods, "ns")["items"][0]["metadata"]["managedFields"] == fields);
  ListOptions lo;
  lo.omit_managed_fields = true;
  CHECK_FALSE(c.List(kPods, "ns", lo)["items"][0]["metadata"].contains("managedFields"));
  // the stored object keeps them
  CHECK(c.Get(kPods, "ns", "a")["metadata"]["managedFields"] == fields);

  WatchOptions wo;
  wo.omit_managed_fields = true;
  auto w = c.Watch(kPods, "ns", wo);
  p["metadata"]["name"] = "b";
  c.Create(kPods, "ns", p);
  for (const char* name : {"a", "b"}) {  // a: the initial state replayed, b: live
    auto e = w->Next();
    REQUIRE(e);
    CHECK(e->object["metadata"]["name"] == name);
    CHECK_FALSE(e->object["metadata"].contains("managedFields"));
  }
  w->Cancel();
}

TEST_CASE("Watch resumes from a resourceVersion, or says 410 when it is too old") {
  FakeClient::Options opts;
  opts.watch_history = 3;
  FakeClient c(opts);
  for (int i = 0; i < 5; ++i) c.Create(kPods, "ns", Pod("p" + std::to_string(i)));

  WatchOptions from3;
  from3.resource_version = "3";
  auto w = c.Watch(kPods, "ns", from3);
  CHECK(w->Next()->object["metadata"]["name"] == "p3");
  CHECK(w->Next()->object["metadata"]["name"] == "p4");

  WatchOptions from1;
  from1.resource_version = "1";
  auto old = c.Watch(kPods, "ns", from1);
  auto err = old->Next();
  REQUIRE(err);
  CHECK(err->type == "ERROR");
  CHECK(err->object["code"] == 410);
  CHECK(err->object["reason"] == "Expired");
  CHECK(err->object["message"] == "too old resource version: 1 (3)");
  CHECK_FALSE(old->Next().has_value());

  WatchOptions fresh;  // no resourceVersion: synthetic ADDED for current state
  auto all = c.Watch(kPods, "ns", fresh);
  for (int i = 0; i < 5; ++i) CHECK(all->Next()->type == "ADDED");

  c.Compact();
  WatchOptions current;
  current.resource_version = "5";
  auto ok = c.Watch(kPods, "ns", current);
  c.Create(kPods, "ns", Pod("p5"));
  CHECK(ok->Next()->object["metadata"]["name"] == "p5");
}

TEST_CASE("Bookmarks, server close, broken streams, prompt cancel") {
  FakeClient c;
  WatchOptions with;
  WatchOptions without;
  without.allow_bookmarks = false;
  auto a = c.Watch(kNodes, "", with);
  auto b = c.Watch(kNodes, "", without);
  c.Create(kPods, "ns", Pod("x"));
  c.SendBookmarks();
  auto bm = a->Next();
  REQUIRE(bm);
  CHECK(bm->type == "BOOKMARK");
  CHECK(bm->object ==
        Json{{"kind", "Node"}, {"apiVersion", "v1"}, {"metadata", {{"resourceVersion", "1"}}}});
  CHECK(c.OpenWatchCount() == 2);
  c.CloseWatches();
  CHECK_FALSE(a->Next().has_value());
  CHECK_FALSE(b->Next().has_value());  // no bookmark queued for it

  auto d = c.Watch(kNodes, "", with);
  c.BreakWatches();
  KubeError broken = Catch([&] { d->Next(); });
  CHECK(broken.kind() == ErrorKind::kTransport);

  auto e = c.Watch(kNodes, "", with);
  std::thread canceller([&] { e->Cancel(); });
  CHECK_FALSE(e->Next().has_value());  // returns once Cancel runs
  canceller.join();
}

TEST_CASE("Fault injection and the call hook") {
  FakeClient c;
  c.Create(kPods, "ns", Pod("a"));
  c.FailNext(Verb::kGet, 2, ErrorKind::kUnavailable);
  KubeError first = Catch([&] { c.Get(kPods, "ns", "a"); });
  CHECK(first.kind() == ErrorKind::kUnavailable);
  CHECK(first.http_status() == 503);
  CHECK(std::string(first.what()) ==
        "get pods ns/a: HTTP 503 Unavailable: injected Unavailable fault");
  CHECK(Catch([&] { c.Get(kPods, "ns", "a"); }).kind() == ErrorKind::kUnavailable);
  CHECK(c.Get(kPods, "ns", "a")["metadata"]["name"] == "a");

  c.FailNext(Verb::kPatch, 1, ErrorKind::kConflict, "virtualmachineinstancemigrations.kubevirt.io");
  c.Patch(kPods, "ns", "a", PatchType::kMergePatch, Json::object());  // other resource: fine
  c.FailNext(Verb::kWatch, 1, ErrorKind::kTransport);
  CHECK(std::string(Catch([&] { c.Watch(kPods, "ns", {}); }).what()) ==
        "watch pods: injected Transport fault");
  c.FailNextWith(Verb::kList, 1, KubeError(ErrorKind::kGone, "custom", 410));
  CHECK(std::string(Catch([&] { c.List(kPods, "ns"); }).what()) == "custom");

  // The hook runs outside the lock: it may write, staging a race.
  c.ClearCalls();
  bool raced = false;
  c.SetCallHook([&](const FakeCall& call) {
    if (call.verb == Verb::kUpdate && !raced) {
      raced = true;
      c.Patch(kPods, "ns", "a", PatchType::kMergePatch, {{"metadata", {{"labels", {{"r", "1"}}}}}});
    }
  });
  Json a = c.Get(kPods, "ns", "a");
  a["metadata"]["labels"]["mine"] = "1";
  CHECK(Catch([&] { c.Update(kPods, "ns", a); }).kind() == ErrorKind::kConflict);
  std::vector<FakeCall> calls = c.Calls();
  REQUIRE(calls.size() == 3);
  CHECK(calls[0].verb == Verb::kGet);
  CHECK(calls[1].verb == Verb::kUpdate);
  CHECK(calls[2].verb == Verb::kPatch);
  CHECK(calls[1].body["metadata"]["labels"]["mine"] == "1");
}

TEST_CASE("Create handlers answer computed resources") {
  FakeClient c;
  c.SetCreateHandler(kSubjectAccessReviews, [](const Json& sar) {
    Json out = sar;
    out["status"] = {{"allowed", sar["spec"]["user"] == "admin"}};
    return out;
  });
  Json review = {{"spec", {{"user", "admin"}}}};
  Json answer = c.Create(kSubjectAccessReviews, "", review);
  CHECK(answer["status"]["allowed"] == true);
  CHECK(answer["kind"] == "SubjectAccessReview");
  CHECK(c.Count(kSubjectAccessReviews) == 0);
}

TEST_CASE("Concurrent writers and watchers stay consistent") {
  FakeClient c;
  c.Create(kLeases, "ns", {{"metadata", {{"name", "counter"}}}, {"spec", {{"n", 0}}}});
  auto w = c.Watch(kLeases, "ns", {});
  REQUIRE(w->Next()->type == "ADDED");
  constexpr int kThreads = 4;
  constexpr int kIncrements = 50;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kIncrements;) {
        Json lease = c.Get(kLeases, "ns", "counter");
        lease["spec"]["n"] = lease["spec"]["n"].get<int>() + 1;
        try {
          c.Update(kLeases, "ns", lease);
          ++i;
        } catch (const KubeError& e) {
          if (e.kind() != ErrorKind::kConflict) throw;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(c.Get(kLeases, "ns", "counter")["spec"]["n"] == kThreads * kIncrements);
  int last = 0;
  for (int i = 0; i < kThreads * kIncrements; ++i) {
    auto e = w->Next();
    REQUIRE(e);
    CHECK(e->object["spec"]["n"] == last + 1);
    last = e->object["spec"]["n"];
  }
}

TEST_CASE(
    "reads leave out of lists and watch events what is not read, as RestClient's parse does") {
  FakeClient c;
  const base::ObjectReads reads{
      {"metadata", "name"}, {"metadata", "resourceVersion"}, {"spec", "containers", "name"}};
  Json p = Pod("a");
  p["spec"]["containers"] = Json::array({{{"name", "compute"}, {"env", Json::array()}}});
  p["status"] = {{"phase", "Pending"}};
  c.Create(kPods, "ns", p);
  ListOptions lo;
  lo.reads = &reads;
  const Json listed = c.List(kPods, "ns", lo)["items"][0];
  Json expected = c.Get(kPods, "ns", "a");
  TrimObject(expected, ObjectTrim{.reads = &reads});
  CHECK(listed == expected);
  CHECK(listed["spec"] == Json::parse(R"({"containers": [{"name": "compute"}]})"));
  CHECK_FALSE(listed.contains("status"));
  CHECK(listed["metadata"].size() == 2);
  // the stored object keeps everything
  CHECK(c.Get(kPods, "ns", "a")["status"]["phase"] == "Pending");

  WatchOptions wo;
  wo.reads = &reads;
  auto w = c.Watch(kPods, "ns", wo);
  auto e = w->Next();
  REQUIRE(e);
  CHECK(e->object == expected);
  w->Cancel();
}

}  // namespace
}  // namespace kmt::kube
