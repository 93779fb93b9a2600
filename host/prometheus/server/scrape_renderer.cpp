// scrape_renderer.cpp — the render threads of /metrics: one render per batch
// of waiting scrapes, each format and encoding rendered only when a scrape of
// the batch asked for it. Tested in
// test/unit/prometheus/server/scrape_renderer_test.cpp.
#include "prometheus/server/scrape_renderer.hpp"

#include <algorithm>
#include <exception>
#include <utility>

#include <tokenspeed/kit/gzip.hpp>

#include "prometheus/scrape/prometheus_exposition.hpp"
#include "prometheus/scrape/protobuf_exposition.hpp"

namespace tokenspeed::metrics {

ScrapeRenderer::ScrapeRenderer(ScrapeHandler handler, FamiliesHandler families, int gzip_level)
    : handler_(std::move(handler)), families_(std::move(families)), gzip_level_(gzip_level) {}

ScrapeRenderer::~ScrapeRenderer() {
  request_stop();
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  drop_waiting();
}

void ScrapeRenderer::start(unsigned threads) {
  for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { render_loop(); });
}

void ScrapeRenderer::request(ScrapeWanted wanted, Answer answer) {
  wanted.protobuf = wanted.protobuf && has_families();
  {
    MutexLock lock(mutex_);
    waiting_.push_back(Waiter{wanted, std::move(answer)});
  }
  wake_.notify_one();
}

void ScrapeRenderer::request_stop() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
}

bool ScrapeRenderer::wait_stopped(std::chrono::steady_clock::time_point deadline) {
  {
    MutexLock lock(mutex_);
    while (returned_ != threads_.size() &&
           finished_.wait_until(mutex_, deadline) == std::cv_status::no_timeout) {
    }
    if (returned_ != threads_.size()) return false;
  }
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  return true;
}

void ScrapeRenderer::drop_waiting() {
  std::deque<Waiter> dropped;
  {
    MutexLock lock(mutex_);
    dropped.swap(waiting_);
  }
}

// Each format some scrape of the batch asked for, and its gzip encoding
// when one of those accepts it.
RenderedScrape ScrapeRenderer::render(const std::deque<Waiter>& batch) const {
  const auto any = [&batch](bool protobuf, bool gzip) {
    return std::any_of(batch.begin(), batch.end(), [&](const Waiter& waiter) {
      return waiter.wanted.protobuf == protobuf && (!gzip || waiter.wanted.gzip);
    });
  };
  RenderedScrape rendered;
  if (!families_) {
    rendered.body = handler_();
  } else {
    const std::vector<MergedFamily> merged = families_();
    if (any(false, false)) rendered.body = render_exposition(merged);
    if (any(true, false)) rendered.protobuf = render_protobuf_exposition(merged);
  }
  if (any(false, true)) rendered.gzipped = kit::gzip_compress(rendered.body, gzip_level_);
  if (any(true, true))
    rendered.protobuf_gzipped = kit::gzip_compress(rendered.protobuf, gzip_level_);
  return rendered;
}

// Rendered after every scrape of the batch arrived: none is answered with
// figures older than its request.
void ScrapeRenderer::answer_batch(std::deque<Waiter>& batch) const {
  auto rendered = std::make_shared<RenderedScrape>();
  try {
    *rendered = render(batch);
  } catch (const std::exception& error) {
    rendered->failed = true;
    rendered->body = error.what();
  } catch (...) {
    // Answered as a failed scrape with this text, to every waiting scrape.
    rendered->failed = true;
    rendered->body = "unknown error";
  }
  std::shared_ptr<const RenderedScrape> shared = std::move(rendered);
  for (Waiter& waiter : batch) waiter.answer(shared);
}

void ScrapeRenderer::render_loop() {
  for (;;) {
    std::deque<Waiter> batch;
    {
      MutexLock lock(mutex_);
      while (!stopping_ && waiting_.empty()) wake_.wait(mutex_);
      if (stopping_) break;
      batch.swap(waiting_);
    }
    answer_batch(batch);
  }
  MutexLock lock(mutex_);
  ++returned_;
  finished_.notify_all();
}

}  // namespace tokenspeed::metrics
