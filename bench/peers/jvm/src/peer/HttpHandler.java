// SPDX-License-Identifier: MIT
package peer;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.AsciiString;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;

/**
 * One per connection; every method runs on the connection's event loop. GET /hello is answered there at once;
 * GET /fruits goes to the store's executor, since JDBC blocks. Answers must leave in request order (HTTP/1.1
 * pipelining), so requests that arrive while a query is out wait in {@code waiting} and are taken up when its
 * answer has been written.
 */
final class HttpHandler extends ChannelInboundHandlerAdapter {
    private static final AsciiString TEXT = AsciiString.cached("text/plain;charset=UTF-8");
    private static final AsciiString JSON = AsciiString.cached("application/json");
    private static final ByteBuf HELLO =
            Unpooled.unreleasableBuffer(Unpooled.directBuffer(5).writeBytes("Hello".getBytes(StandardCharsets.US_ASCII)));

    private final FruitStore store;
    private final ArrayDeque<HttpRequest> waiting = new ArrayDeque<>();
    private boolean busy;

    HttpHandler(FruitStore store) {
        this.store = store;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        try {
            if (msg instanceof HttpRequest req) {
                if (busy)
                    waiting.add(req);
                else
                    handle(ctx, req);
            }
        } finally {
            ReferenceCountUtil.release(msg); // request bodies (HttpContent) are not read
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        ctx.flush();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        ctx.close(); // a reset connection, mostly; nothing to answer
    }

    private void handle(ChannelHandlerContext ctx, HttpRequest req) {
        if (req.decoderResult().isFailure()) {
            send(ctx, req, HttpResponseStatus.BAD_REQUEST, TEXT, text("bad request"));
            return;
        }
        String uri = req.uri();
        int q = uri.indexOf('?');
        String path = q < 0 ? uri : uri.substring(0, q);
        boolean get = req.method().equals(HttpMethod.GET);
        if (get && path.equals("/hello")) {
            send(ctx, req, HttpResponseStatus.OK, TEXT, HELLO.duplicate());
        } else if (get && path.equals("/fruits")) {
            busy = true;
            store.list().whenComplete((body, err) -> ctx.executor().execute(() -> answered(ctx, req, body, err)));
        } else if (path.equals("/hello") || path.equals("/fruits")) {
            send(ctx, req, HttpResponseStatus.METHOD_NOT_ALLOWED, TEXT, text("method not allowed"));
        } else {
            send(ctx, req, HttpResponseStatus.NOT_FOUND, TEXT, text("not found"));
        }
    }

    /** On the event loop, once the query of {@code req} is done: answer it, then what waited behind it. */
    private void answered(ChannelHandlerContext ctx, HttpRequest req, byte[] body, Throwable err) {
        if (err != null)
            send(ctx, req, HttpResponseStatus.INTERNAL_SERVER_ERROR, TEXT, text("database error: " + rootMessage(err)));
        else
            send(ctx, req, HttpResponseStatus.OK, JSON, Unpooled.wrappedBuffer(body));
        busy = false;
        while (!busy && !waiting.isEmpty())
            handle(ctx, waiting.poll());
        ctx.flush();
    }

    private static void send(ChannelHandlerContext ctx, HttpRequest req, HttpResponseStatus status, AsciiString type,
                             ByteBuf body) {
        FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, body);
        res.headers().set(HttpHeaderNames.CONTENT_TYPE, type).setInt(HttpHeaderNames.CONTENT_LENGTH, body.readableBytes());
        if (HttpUtil.isKeepAlive(req)) {
            if (!req.protocolVersion().isKeepAliveDefault())
                res.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
            ctx.write(res, ctx.voidPromise());
        } else {
            res.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
            ctx.write(res).addListener(ChannelFutureListener.CLOSE);
        }
    }

    private static ByteBuf text(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.UTF_8);
    }

    private static String rootMessage(Throwable t) {
        while (t.getCause() != null)
            t = t.getCause();
        return String.valueOf(t.getMessage());
    }
}
