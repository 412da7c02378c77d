// The pool behind TargetPodShape::MakeShared (api/projections.h): one live shape per content,
// held by weak reference, so an entry goes with the last pod holding its shape.
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "api/projections.h"

namespace kmt::api {
namespace {

struct Pool {
  std::mutex mu;
  std::unordered_map<std::string, std::weak_ptr<const TargetPodShape>> shapes;
};

// Never destroyed: pods may outlive static destruction.
Pool& ThePool() {
  static Pool* const pool = new Pool;
  return *pool;
}

// Deletes a pooled shape, and its pool entry unless a newer shape took the key meanwhile.
struct PooledDeleter {
  std::string key;
  void operator()(const TargetPodShape* shape) const {
    {
      Pool& pool = ThePool();
      const std::scoped_lock lock(pool.mu);
      const auto it = pool.shapes.find(key);
      if (it != pool.shapes.end() && it->second.expired()) pool.shapes.erase(it);
    }
    delete shape;
  }
};

}  // namespace

std::shared_ptr<const TargetPodShape> TargetPodShape::MakeShared(std::string key,
                                                                 TargetPodShape shape) {
  Pool& pool = ThePool();
  // Declared before the lock, so released after it: dropping the last reference runs the
  // deleter, which takes the lock.
  std::shared_ptr<const TargetPodShape> live;
  const std::scoped_lock lock(pool.mu);
  auto [it, inserted] = pool.shapes.try_emplace(key);
  if (!inserted) {
    live = it->second.lock();
    if (live) {
      // The key is a hint (its text replaces invalid UTF-8): share only what is equal.
      if (*live == shape) return live;
      return std::make_shared<TargetPodShape>(std::move(shape));
    }
  }
  // The deleter locks the pool: it cannot run before this returns, as the caller holds the
  // only reference and the lock is held until then.
  std::shared_ptr<const TargetPodShape> made(new TargetPodShape(std::move(shape)),
                                             PooledDeleter{std::move(key)});
  it->second = made;
  return made;
}

const std::shared_ptr<const TargetPodShape>& TargetPodShape::Empty() {
  static const auto* const empty =
      new std::shared_ptr<const TargetPodShape>(std::make_shared<TargetPodShape>());
  return *empty;
}

size_t TargetPodShape::PoolSize() {
  Pool& pool = ThePool();
  const std::scoped_lock lock(pool.mu);
  return pool.shapes.size();
}

TargetPodShape& TargetPod::mutable_shape() {
  if (shape_pooled() || shape_.p.use_count() != 1 || shape_.p == TargetPodShape::Empty()) {
    shape_.p = std::make_shared<TargetPodShape>(*shape_.p);
  }
  // Made here, unpooled and held by this pod alone: not const.
  return const_cast<TargetPodShape&>(*shape_.p);  // NOLINT(cppcoreguidelines-pro-type-const-cast)
}

bool TargetPod::shape_pooled() const {
  return std::get_deleter<PooledDeleter>(shape_.p) != nullptr;
}

}  // namespace kmt::api
