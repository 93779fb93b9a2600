// scrape_renderer.hpp — the render side of /metrics: scrapes wait in a queue,
// and a render thread takes every waiting scrape at once and answers them all
// from one render (the text or protobuf exposition, gzip-encoded when one of
// them accepts it). A burst of scrapes then costs about one render per render
// thread, never one per request, and a slow render never holds up a
// connection's I/O. Knows no connection: each scrape brings the callback
// that answers it.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/thread_safety.hpp"
#include "prometheus/scrape/prometheus_merge.hpp"

namespace tokenspeed::metrics {

// Renders the exposition body. Called on a render thread, concurrently from
// several when scrapes overlap: it must be thread-safe. The requests that
// arrive while the render threads are busy share the next render.
using ScrapeHandler = std::function<std::string()>;
// Gives the families to render (the same rules): the renderer then renders
// the text or the protobuf exposition, as each scraper's Accept asks
// (protobuf_exposition.hpp), once per render for all who asked the same.
using FamiliesHandler = std::function<std::vector<MergedFamily>()>;

// One render of the exposition, shared by every scrape that waited for it.
struct RenderedScrape {
  bool failed = false;
  std::string body;              // the text exposition, or the error's text when failed
  std::string gzipped;           // the body gzip-encoded, when a waiting scrape accepts gzip
  std::string protobuf;          // the protobuf exposition, when a waiting scrape asked for it
  std::string protobuf_gzipped;  // and gzip-encoded, when one of those accepts gzip
};

// What a scrape asked for.
struct ScrapeWanted {
  bool gzip = false;
  bool protobuf = false;  // the protobuf exposition (only a renderer with families has it)
};

class ScrapeRenderer {
 public:
  // Called on a render thread with the render the scrape waited for.
  using Answer = std::function<void(std::shared_ptr<const RenderedScrape>)>;

  // Renders with families when given, else with handler.
  ScrapeRenderer(ScrapeHandler handler, FamiliesHandler families, int gzip_level);
  // Stops and joins the threads; waiting scrapes are dropped unanswered.
  ~ScrapeRenderer();
  ScrapeRenderer(const ScrapeRenderer&) = delete;
  ScrapeRenderer& operator=(const ScrapeRenderer&) = delete;

  // Whether the protobuf exposition can be rendered (made with families).
  bool has_families() const noexcept { return static_cast<bool>(families_); }
  void start(unsigned threads);
  // Queues a scrape for the next render; answer is called once, from a
  // render thread, unless the renderer stops first. A render that throws
  // answers every scrape of its batch as failed with the error's text.
  void request(ScrapeWanted wanted, Answer answer);

  // Asks the threads to return (a render in progress ends first); waiting
  // scrapes stay queued, unanswered.
  void request_stop();
  // After request_stop: true once every thread has returned (they are then
  // joined), false when one still runs at deadline.
  bool wait_stopped(std::chrono::steady_clock::time_point deadline);
  // Releases the waiting scrapes' callbacks (and what they hold), outside
  // the queue's lock.
  void drop_waiting();

 private:
  struct Waiter {
    ScrapeWanted wanted;
    Answer answer;
  };
  void render_loop();
  RenderedScrape render(const std::deque<Waiter>& batch) const;
  void answer_batch(std::deque<Waiter>& batch) const;

  const ScrapeHandler handler_;
  const FamiliesHandler families_;
  const int gzip_level_;

  Mutex mutex_;
  CondVar wake_;      // a scrape queued, or stopping
  CondVar finished_;  // a thread returned
  std::deque<Waiter> waiting_ TSM_GUARDED_BY(mutex_);
  bool stopping_ TSM_GUARDED_BY(mutex_) = false;
  unsigned returned_ TSM_GUARDED_BY(mutex_) = 0;
  std::vector<std::thread> threads_;  // started and joined by the owner's thread
};

}  // namespace tokenspeed::metrics
