// bench/server/floor.c — the floor of an epoll HTTP/1.1 keep-alive server:
// what the kernel alone costs per request under bench/perf.sh's keep-alive
// load, to set pagewire's and h2o's CPU per request beside.
//
// It is not a server: it counts "\r\n\r\n" in what it reads and answers each
// with one prebuilt 1 KB response (a fixed head; the body is not the file's),
// one recv and one send per request, edge-triggered epoll, TCP_NODELAY, no
// parsing, no timers, no file access. Loopback only.
//
// Build: gcc -O2 -o floor bench/server/floor.c
// Run:   taskset -c 0 ./floor PORT [MODE]   (MODE 0: send, 1: writev)
#define _GNU_SOURCE
#include <sys/uio.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <errno.h>
static char resp[2048]; static int rlen;
int main(int argc,char**argv){
  int port=atoi(argv[1]); int mode=argc>2?atoi(argv[2]):0; // 0 send, 1 writev
  rlen=sprintf(resp,"HTTP/1.1 200 OK\r\nServer: x\r\nDate: Thu, 26 Nov 2026 15:00:00 GMT\r\nContent-Type: application/octet-stream\r\nContent-Length: 1024\r\nETag: \"abc\"\r\n\r\n");
  memset(resp+rlen,'x',1024); rlen+=1024;
  int l=socket(AF_INET,SOCK_STREAM|SOCK_NONBLOCK,0); int one=1; setsockopt(l,SOL_SOCKET,SO_REUSEADDR,&one,4);
  struct sockaddr_in a={.sin_family=AF_INET,.sin_port=htons(port)}; inet_pton(AF_INET,"127.0.0.1",&a.sin_addr);
  if(bind(l,(void*)&a,sizeof a)){perror("bind");return 1;} listen(l,4096);
  int ep=epoll_create1(0); struct epoll_event ev={.events=EPOLLIN,.data.fd=l}; epoll_ctl(ep,EPOLL_CTL_ADD,l,&ev);
  struct epoll_event evs[256]; char buf[8192];
  for(;;){int n=epoll_wait(ep,evs,256,-1);
    for(int i=0;i<n;i++){int fd=evs[i].data.fd;
      if(fd==l){int c; while((c=accept4(l,0,0,SOCK_NONBLOCK))>=0){setsockopt(c,IPPROTO_TCP,TCP_NODELAY,&one,4); struct epoll_event e={.events=EPOLLIN|EPOLLET|EPOLLRDHUP,.data.fd=c}; epoll_ctl(ep,EPOLL_CTL_ADD,c,&e);} continue;}
      for(;;){ssize_t r=recv(fd,buf,sizeof buf,0); if(r==0){close(fd);break;} if(r<0){if(errno!=EAGAIN)close(fd);break;}
        int reqs=0; for(ssize_t k=3;k<r;k++) if(buf[k]=='\n'&&buf[k-1]=='\r'&&buf[k-2]=='\n'&&buf[k-3]=='\r') reqs++;
        for(int q=0;q<reqs;q++){ if(mode==0) send(fd,resp,rlen,MSG_NOSIGNAL); else {struct iovec v={resp,rlen}; writev(fd,&v,1);} }
        if(r<(ssize_t)sizeof buf) break; }
    }}
}
